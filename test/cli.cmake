# cli.cmake — tests of the uopjit command-line tool (included by
# test/CMakeLists.txt). Each test runs the tool once through cli_check.sh,
# which checks the exit status, stdout and stderr (and written files):
#   uj_cli_test(NAME CHECKS... -- COMMAND...)
# See cli_check.sh for the checks. Inputs and expected outputs sit in
# test/data/cli. Run them alone with `ctest -R cli_`.
set(CLI_CHECK ${CMAKE_CURRENT_SOURCE_DIR}/cli_check.sh)
set(D ${CMAKE_CURRENT_SOURCE_DIR}/data/cli)
set(T $<TARGET_FILE:uopjit_tool>)
set(OUT ${CMAKE_CURRENT_BINARY_DIR}/cli_out)
file(MAKE_DIRECTORY ${OUT})
set(ONE_ERROR --status 1 --stdout-empty --stderr-lines 1)

function(uj_cli_test name)
  add_test(NAME cli_${name} COMMAND bash ${CLI_CHECK} ${ARGN})
endfunction()

# ---- inputs: a file, -c, stdin, '-', a pipe ----
uj_cli_test(file --stdout-file ${D}/index.out --stderr-empty -- ${T} ${D}/index.uop)
uj_cli_test(command_line --stdout "(DEFINE_VAR:int32 x 0 15)" --stderr-empty
  -- ${T} -c "(ADD:int32 (DEFINE_VAR:int32 x 0 15) (CONST:int32 0))")
uj_cli_test(stdin --stdin ${D}/index.uop --stdout-file ${D}/index.out -- ${T})
uj_cli_test(stdin_dash --stdin ${D}/index.uop --stdout-file ${D}/index.out -- ${T} -)
uj_cli_test(stdin_pipe --stdout-file ${D}/index.out -- sh -c "cat '${D}/index.uop' | '${T}'")

# ---- what comes out: simplified, canonical, to a file, stable ----
uj_cli_test(example --stdout-file ${D}/example.out -- ${T} ${PROJECT_SOURCE_DIR}/examples/simplify.uop)
uj_cli_test(no_simplify --stdout-file ${D}/index_nosimplify.out -- ${T} --no-simplify ${D}/index.uop)
uj_cli_test(no_simplify_c --stdout "(ADD:int32 (CONST:int32 1) (CONST:int32 2))"
  -- ${T} --no-simplify -c "(ADD (CONST:int32 1) (CONST:int32 2))")
uj_cli_test(fold --stdout "(CONST:int32 3)" -- ${T} -c "(ADD (CONST:int32 1) (CONST:int32 2))")
uj_cli_test(output_file --rm ${OUT}/o.uop --stdout-empty --stderr-empty
  --file ${OUT}/o.uop "(SINK (DEFINE_VAR:int32 x 0 15) (DEFINE_VAR:int32 y 0 3))"
  -- ${T} -o ${OUT}/o.uop ${D}/index.uop)
uj_cli_test(reparse --stdout-file ${D}/index_nosimplify.out
  -- sh -c "'${T}' --no-simplify '${D}/index.uop' | '${T}' --no-simplify")
uj_cli_test(idempotent --stdout-file ${D}/example.out
  -- sh -c "'${T}' '${PROJECT_SOURCE_DIR}/examples/simplify.uop' | '${T}'")

# ---- bad input: one line on stderr, nothing on stdout, status 1 ----
uj_cli_test(parse_error ${ONE_ERROR}
  --stderr-re "^uopjit: .*/parse_error\\.uop:4:1: unexpected end of input, expected '\\)'$"
  -- ${T} ${D}/parse_error.uop)
uj_cli_test(parse_error_c ${ONE_ERROR}
  --stderr-re "^uopjit: <command line>:1:[0-9]+: unknown dtype 'int33'"
  -- ${T} -c "(ADD (CONST:int32 1) (CONST:int33 2))")
uj_cli_test(unknown_op ${ONE_ERROR} --stderr-re "^uopjit: .*/unknown_op\\.uop:3:4: unknown op 'FROB'$"
  -- ${T} ${D}/unknown_op.uop)
uj_cli_test(type_error ${ONE_ERROR}
  --stderr-re "^uopjit: .*/type_error\\.uop:2:1: ADD: sources have different dtypes int32 and float32$"
  -- ${T} ${D}/type_error.uop)
uj_cli_test(unreadable ${ONE_ERROR}
  --stderr-re "^uopjit: cannot read '.*/missing\\.uop': No such file or directory$"
  -- ${T} ${D}/missing.uop)
uj_cli_test(directory ${ONE_ERROR} --stderr-re "^uopjit: cannot read '.*': Is a directory$"
  -- ${T} ${D})
uj_cli_test(unwritable ${ONE_ERROR} --stderr-re "^uopjit: cannot write '.*/no/such/dir/o\\.uop': "
  -- ${T} -o ${OUT}/no/such/dir/o.uop ${D}/index.uop)
uj_cli_test(empty_stdin ${ONE_ERROR} --stderr-re "^uopjit: <stdin>:1:1: empty program$" -- ${T})
uj_cli_test(empty_file ${ONE_ERROR} --stderr-re "^uopjit: .*/empty\\.uop:[0-9]+:[0-9]+: empty program$"
  -- ${T} ${D}/empty.uop)

# ---- options ----
uj_cli_test(unknown_option ${ONE_ERROR} --stderr-re "^uopjit: unknown option '--frob'" -- ${T} --frob)
uj_cli_test(missing_value ${ONE_ERROR} --stderr-re "^uopjit: option '-c' needs an argument$" -- ${T} -c)
uj_cli_test(two_inputs ${ONE_ERROR} --stderr-re "^uopjit: more than one input"
  -- ${T} ${D}/index.uop -c "(CONST:int32 1)")
uj_cli_test(help --stdout-has "usage: uopjit" --stdout-has "--no-simplify" -- ${T} --help)
uj_cli_test(help_short --stdout-has "usage: uopjit" -- ${T} -h)
uj_cli_test(version --stdout "uopjit ${PROJECT_VERSION}" -- ${T} --version)

# ---- the prompt (-i forces it on a non-terminal stdin) ----
uj_cli_test(repl --stdin ${D}/repl.in
  --stdout-has "uj> " --stdout-has ":quit   leave"
  --stdout-has "(DEFINE_VAR:int32 x 0 15)" --stdout-has "(DEFINE_VAR:int32 y 0 3)"
  --stdout-has "(SINK (DEFINE_VAR:int32 \"odd)name\" 0 1))"
  --stdout-lacks "(CONST:int32 1)"
  --stderr-re "^uopjit: <stdin>:1:2: unknown op 'FROB'$"
  --stderr-re "^uopjit: unknown command ':nonsense'" --stderr-lines 2
  -- ${T} -i)
uj_cli_test(repl_eof --stdin ${D}/index.uop --stdout-has "(SINK (DEFINE_VAR:int32 x 0 15) (DEFINE_VAR:int32 y 0 3))"
  --stderr-empty -- ${T} -i)
uj_cli_test(repl_with_file ${ONE_ERROR} --stderr-re "^uopjit: -i reads from stdin" -- ${T} -i ${D}/index.uop)

unset(D)
unset(T)
unset(OUT)
unset(ONE_ERROR)
