# The kess-run driver end to end (perf/kess_run/): generated problems of the Gauss-Jordan family
# (and the generalized eigenproblem)
# must come back with rounding-level residuals (the driver prints them; the regular expressions
# accept 1e-13 and below, 1e-12 for sign), locally and on 2 ranks, and a bad generator name or
# pivoting value must fail with its message. Built only with the benchmarks (kess-run lives in perf/).
if(TARGET kess-run)
  set(kess_run_small_residual "residual [^=]*= [0-9]\\.[0-9]+e-1[3-9]")
  function(kess_add_run_test name regex)
    add_test(NAME ${name} COMMAND ${ARGN})
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}"
                         ENVIRONMENT "${KESS_TEST_ENV}" TIMEOUT 120 LABELS "driver")
  endfunction()
  kess_add_run_test(kess_run_solve_generated "${kess_run_small_residual}"
                    $<TARGET_FILE:kess-run> solve --generate random --n 300 --nrhs 20 --block 64)
  kess_add_run_test(kess_run_inverse_generated "${kess_run_small_residual}"
                    $<TARGET_FILE:kess-run> inverse --generate random --n 257 --seed 4)
  kess_add_run_test(kess_run_sign_generated "stopped by quadratic.*residual [^=]*= [0-9]\\.[0-9]+e-1[2-9]"
                    $<TARGET_FILE:kess-run> sign --generate random --n 200)
  # --pivoting tournament: the CUDA device panel's tournament leaves (elsewhere partial pivoting)
  kess_add_run_test(kess_run_solve_tournament "${kess_run_small_residual}"
                    $<TARGET_FILE:kess-run> solve --generate random --n 300 --nrhs 20 --pivoting tournament)
  kess_add_run_test(kess_run_pivoting_bad_value "'--pivoting' must be partial or tournament"
                    $<TARGET_FILE:kess-run> solve --generate random --n 10 --pivoting full)
  kess_add_run_test(kess_run_generate_bad_name "--generate 'nosuch': expected random"
                    $<TARGET_FILE:kess-run> solve --generate nosuch --n 10)
  # the generalized eigenproblem with a generated B, the reduction on the execution space
  kess_add_run_test(kess_run_eigh_generalized_generated
                    "reduction \\(blas\\).*residual [^=]*= [0-9]\\.[0-9]+e-1[3-9].*check +OK"
                    $<TARGET_FILE:kess-run> eigh --n 300 --generate-b spd --generalized blas)
  kess_add_run_test(kess_run_eigh_b_not_positive_definite
                    "not_positive_definite.*'B' is not positive definite: Cholesky pivot"
                    $<TARGET_FILE:kess-run> eigh --n 50 --generate-b random)
  kess_add_run_test(kess_run_size_without_generate "--n goes with --generate"
                    $<TARGET_FILE:kess-run> inverse --matrix no_such_file.mtx --n 10)
  if(KESS_ENABLE_MPI)
    kess_add_run_test(kess_run_solve_generated_np2
                      "distributed \\(1 x P grid\\).*${kess_run_small_residual}"
                      ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS}
                      $<TARGET_FILE:kess-run> ${MPIEXEC_POSTFLAGS} solve --generate random
                      --n 300 --block 32)
    set_tests_properties(kess_run_solve_generated_np2 PROPERTIES PROCESSORS 2)
  endif()
endif()
