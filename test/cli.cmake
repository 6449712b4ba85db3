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
  -- ${T} --uops -c "(ADD:int32 (DEFINE_VAR:int32 x 0 15) (CONST:int32 0))")
uj_cli_test(stdin --stdin ${D}/index.uop --stdout-file ${D}/index.out -- ${T} --uops)
uj_cli_test(stdin_dash --stdin ${D}/index.uop --stdout-file ${D}/index.out -- ${T} --uops -)
uj_cli_test(stdin_pipe --stdout-file ${D}/index.out -- sh -c "cat '${D}/index.uop' | '${T}' --uops")

# ---- what comes out: simplified, canonical, to a file, stable ----
uj_cli_test(example --stdout-file ${D}/example.out -- ${T} ${PROJECT_SOURCE_DIR}/examples/simplify.uop)
uj_cli_test(no_simplify --stdout-file ${D}/index_nosimplify.out -- ${T} --no-simplify ${D}/index.uop)
uj_cli_test(no_simplify_c --stdout "(ADD:int32 (CONST:int32 1) (CONST:int32 2))"
  -- ${T} --no-simplify -c "(ADD (CONST:int32 1) (CONST:int32 2))")
uj_cli_test(fold --stdout "(CONST:int32 3)" -- ${T} --uops -c "(ADD (CONST:int32 1) (CONST:int32 2))")
uj_cli_test(output_file --rm ${OUT}/o.uop --stdout-empty --stderr-empty
  --file ${OUT}/o.uop "(SINK (DEFINE_VAR:int32 x 0 15) (DEFINE_VAR:int32 y 0 3))"
  -- ${T} -o ${OUT}/o.uop ${D}/index.uop)
uj_cli_test(reparse --stdout-file ${D}/index_nosimplify.out
  -- sh -c "'${T}' --no-simplify '${D}/index.uop' | '${T}' --no-simplify")
uj_cli_test(idempotent --stdout-file ${D}/example.out
  -- sh -c "'${T}' '${PROJECT_SOURCE_DIR}/examples/simplify.uop' | '${T}' --uops")

# ---- bad input: one line on stderr, nothing on stdout, status 1 ----
uj_cli_test(parse_error ${ONE_ERROR}
  --stderr-re "^uopjit: .*/parse_error\\.uop:4:1: unexpected end of input, expected '\\)'$"
  -- ${T} ${D}/parse_error.uop)
uj_cli_test(parse_error_c ${ONE_ERROR}
  --stderr-re "^uopjit: <command line>:1:[0-9]+: unknown dtype 'int33'"
  -- ${T} --uops -c "(ADD (CONST:int32 1) (CONST:int33 2))")
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
uj_cli_test(empty_stdin ${ONE_ERROR} --stderr-re "^uopjit: <stdin>:1:1: empty program$" -- ${T} --uops)
uj_cli_test(empty_file ${ONE_ERROR} --stderr-re "^uopjit: .*/empty\\.uop:[0-9]+:[0-9]+: empty program$"
  -- ${T} ${D}/empty.uop)

# ---- options ----
uj_cli_test(unknown_option ${ONE_ERROR} --stderr-re "^uopjit: unknown option '--frob'" -- ${T} --frob)
uj_cli_test(missing_value ${ONE_ERROR} --stderr-re "^uopjit: option '-c' needs an argument$" -- ${T} -c)
uj_cli_test(two_inputs ${ONE_ERROR} --stderr-re "^uopjit: more than one input"
  -- ${T} ${D}/index.uop -c "(CONST:int32 1)")
uj_cli_test(help --stdout-has "usage: uopjit" --stdout-has "--no-simplify" -- ${T} --help)
uj_cli_test(help_short --stdout-has "usage: uopjit" -- ${T} -h)
uj_cli_test(help_run --stdout-has "uopjit run [run options]" --stdout-has "--emit=KIND"
  --stdout-has "--arg SLOT=zeros:N" --stdout-has "UJ_DEBUG" -- ${T} --help)
uj_cli_test(version --stdout-has "uopjit ${PROJECT_VERSION} (LLVM 19." --stdout-has "targets: cpu nvptx amdgpu"
  --stdout-has "devices: CPU, EVAL, CUDA" -- ${T} --version)

# ---- the prompt (-i forces it on a non-terminal stdin) ----
uj_cli_test(repl --stdin ${D}/repl.in
  --stdout-has "uj> " --stdout-has ":quit   leave"
  --stdout-has "(DEFINE_VAR:int32 x 0 15)" --stdout-has "(DEFINE_VAR:int32 y 0 3)"
  --stdout-has "(SINK (DEFINE_VAR:int32 \"odd)name\" 0 1))"
  --stdout-lacks "(CONST:int32 1)"
  --stderr-re "^uopjit: <stdin>:1:2: unknown op 'FROB'$"
  --stderr-re "^uopjit: unknown command ':nonsense'" --stderr-lines 2
  -- ${T} -i --uops)
uj_cli_test(repl_eof --stdin ${D}/index.uop --stdout-has "(SINK (DEFINE_VAR:int32 x 0 15) (DEFINE_VAR:int32 y 0 3))"
  --stderr-empty -- ${T} -i --uops)
uj_cli_test(repl_with_file ${ONE_ERROR} --stderr-re "^uopjit: -i reads from stdin" -- ${T} -i ${D}/index.uop)

# ---- --emit: the stages of a kernel (uj_emit), --arch ----
set(K ${D}/kernel_add.uop)
uj_cli_test(emit_uops --stdout-file ${D}/index.out --stderr-empty -- ${T} --emit=uops ${D}/index.uop)
uj_cli_test(emit_ir --stdout-has "define void @kernel(" --stdout-has "fadd float" --stderr-empty
  -- ${T} --emit=ir ${K})
uj_cli_test(emit_ir_opt --stdout-has "define void @kernel(" --stderr-empty -- ${T} --emit=ir-opt ${K})
uj_cli_test(emit_ir_gpu --stdout-has "target triple = \"nvptx64-nvidia-cuda\"" --stdout-has "@kernel("
  -- ${T} --emit=ir --arch=sm_80 ${K})
uj_cli_test(emit_asm --stdout-has "kernel:" --stderr-empty -- ${T} --emit=asm ${K})
uj_cli_test(emit_ptx --stdout-has ".visible .entry kernel(" --stdout-has ".target sm_90" --stderr-empty
  -- ${T} --emit=ptx ${K})
uj_cli_test(emit_ptx_arch --stdout-has ".visible .entry kernel(" --stdout-has ".target sm_80"
  -- ${T} --emit ptx --arch sm_80 ${K})
uj_cli_test(emit_amdgcn --stdout-has ".amdhsa_kernel kernel" --stdout-has "gfx942" --stderr-empty
  -- ${T} --emit=amdgcn --arch=gfx942 ${K})
uj_cli_test(emit_hsaco_file --rm ${OUT}/k.hsaco --stdout-empty --stderr-empty --file-head ${OUT}/k.hsaco 7f454c46
  -- ${T} --emit=hsaco --arch=gfx1100 -o ${OUT}/k.hsaco ${K})
uj_cli_test(emit_hsaco_pipe --stdout-has "ELF" --stderr-empty
  -- sh -c "'${T}' --emit=hsaco '${K}' | cat")
uj_cli_test(emit_to_file --rm ${OUT}/k.ll --stdout-has "define void @kernel("
  -- sh -c "'${T}' --emit=ir -o '${OUT}/k.ll' '${K}' && cat '${OUT}/k.ll'")
find_program(UJ_SCRIPT script) # util-linux script: runs a command on a terminal
if(UJ_SCRIPT)
  uj_cli_test(emit_hsaco_terminal --status 1 --stdout-has "give -o FILE or pipe stdout"
    -- ${UJ_SCRIPT} -qec "'${T}' --emit=hsaco '${K}'" /dev/null)
endif()
uj_cli_test(emit_not_kernel ${ONE_ERROR}
  --stderr-re "^uopjit: <command line>: ptx: kernel: the root is a ADD, not a SINK, END or STORE$"
  -- ${T} --emit=ptx -c "(ADD (DEFINE_VAR:int32 x 0 15) (CONST:int32 1))")
uj_cli_test(emit_unknown ${ONE_ERROR}
  --stderr-re "^uopjit: unknown --emit kind 'frob' \\(known: uops, ir, ir-opt, asm, ptx, amdgcn, hsaco, list, dot\\)$"
  -- ${T} --emit=frob ${K})
uj_cli_test(emit_no_value ${ONE_ERROR} --stderr-re "^uopjit: option '--emit' needs an argument$" -- ${T} --emit)
uj_cli_test(arch_unknown_ptx ${ONE_ERROR}
  --stderr-re "^uopjit: .*/kernel_add\\.uop: ptx: unknown nvptx arch 'sm_70' \\(known: .*sm_80.*\\)$"
  -- ${T} --emit=ptx --arch=sm_70 ${K})
uj_cli_test(arch_unknown_amdgcn ${ONE_ERROR}
  --stderr-re "^uopjit: .*: amdgcn: unknown amdgpu arch 'gfx1' \\(known: .*gfx942.*\\)$"
  -- ${T} --emit=amdgcn --arch=gfx1 ${K})
uj_cli_test(arch_wrong_gpu ${ONE_ERROR} --stderr-re "^uopjit: .*: ptx: unknown nvptx arch 'gfx90a'"
  -- ${T} --emit=ptx --arch=gfx90a ${K})
uj_cli_test(arch_unknown_ir ${ONE_ERROR} --stderr-re "^uopjit: .*: ir: .*unknown arch 'x86'$"
  -- ${T} --emit=ir --arch=x86 ${K})
uj_cli_test(arch_without_emit ${ONE_ERROR} --stderr-re "^uopjit: --arch needs --emit=ir, ir-opt, ptx, amdgcn, hsaco or list$"
  -- ${T} --arch=sm_80 ${K})
uj_cli_test(arch_asm ${ONE_ERROR} --stderr-re "^uopjit: --arch does not apply to --emit=asm"
  -- ${T} --emit=asm --arch=sm_80 ${K})

# ---- the prompt: --emit, and :ir, :ptx... on the last program ----
uj_cli_test(repl_emit_commands --stdin ${D}/repl_emit.in
  --stdout-has "define void @kernel(" --stdout-has "kernel:" --stdout-has ".target sm_80"
  --stdout-has ".visible .entry kernel(" --stdout-has ".amdhsa_kernel kernel" --stdout-has "gfx942"
  --stdout-has "(STORE (INDEX:float32* (PARAM:float32* 0) %0) (CONST:float32 1.0))"
  --stderr-re "^uopjit: no program yet: enter one, then ':ir'$"
  --stderr-re "^uopjit: ':hsaco' makes a binary: use uopjit --emit=hsaco -o FILE$"
  --stderr-re "^uopjit: <stdin>: ptx: unknown nvptx arch 'sm_70'"
  --stderr-re "^uopjit: ':ptx' takes at most one argument, an arch$"
  --stderr-re "^uopjit: <stdin>:1:2: unknown op 'FROB'$" --stderr-lines 5
  -- ${T} -i --uops)
uj_cli_test(repl_emit_option --stdin ${K} --stdout-has "uj> " --stdout-has ".visible .entry kernel("
  --stderr-empty -- ${T} -i --emit=ptx)
uj_cli_test(repl_hsaco ${ONE_ERROR} --stderr-re "^uopjit: --emit=hsaco writes a binary: not at the prompt"
  -- ${T} -i --emit=hsaco)

# ---- run: buffers, variables, results ----
uj_cli_test(run --stdout "0=2.0,3.0,4.0,5.5" --stderr-empty
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4.5 --var n=4)
uj_cli_test(run_equals_form --stdout "0=2.0,3.0,4.0,5.5"
  -- ${T} run ${K} --arg=0=zeros:4 --arg=1=1,2,3,4.5 --var=n=4)
uj_cli_test(run_fewer_steps --stdout "0=2.0,3.0,0.0,0.0"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var n=2)
uj_cli_test(run_print --stdout "1=0.5,1.5,-2.0,1e-45\n0=1.5,2.5,-1.0,1.0"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=file:${D}/f32x4.bin --var n=4 --print 1 --print 0)
uj_cli_test(run_stdin --stdin ${K} --stdout "0=1.0" -- ${T} run --arg 0=zeros:1 --arg 1=0 --var n=1)
uj_cli_test(run_command_line --stdout "0=7"
  -- ${T} run -c "(STORE (PARAM:int32* 0) (CONST:int32 7))" --arg 0=zeros:1)
set(TYPES_ARGS --var n=4 --arg 0=zeros:4 --arg 1=-128,127,0,-1
  --arg 2=zeros:4 --arg 3=18446744073709551615,0,1,9223372036854775808
  --arg 4=zeros:4 --arg 5=0.1,65504,1e-7,-inf --arg 6=zeros:4 --arg 7=3.14,nan,-0.0,1e38
  --arg 8=zeros:4 --arg 9=true,false,1,0 --arg 10=zeros:4 --arg 11=0.1,0.2,0x1p-3,nan --arg 12=0.5
  --arg 13=zeros:4 --arg 14=1,2,3,4,5,6,7,8.25)
uj_cli_test(run_types --stdout-file ${D}/types_run.out --stderr-empty -- ${T} run ${D}/kernel_types.uop ${TYPES_ARGS})
uj_cli_test(run_output_file --rm ${OUT}/run.txt --stdout-empty --stderr-empty --file ${OUT}/run.txt "0=2.0"
  -- ${T} run ${K} --arg 0=zeros:1 --arg 1=1 --var n=1 -o ${OUT}/run.txt)
uj_cli_test(run_save --rm ${OUT}/y.bin --stdout-empty --stderr-empty --file-head ${OUT}/y.bin 0000c03f0000204000000040
  -- ${T} run ${K} --arg 0=zeros:3 --arg 1=0.5,1.5,1 --var n=3 --save 0=${OUT}/y.bin)
uj_cli_test(run_gated --stdout "0=-1,10,20,30" -- ${T} run ${D}/kernel_gated.uop --arg 0=zeros:4 --arg 1=10,20,30,40 --var n=4)
uj_cli_test(run_no_bounds_check --stdout "0=30.0,10.0,20.0"
  -- ${T} run ${D}/kernel_gather.uop --arg 0=zeros:3 --arg 1=10,20,30 --arg 2=2,0,1 --var n=3 --no-bounds-check)

# ---- run: every error is one line, nothing on stdout, status 1 ----
uj_cli_test(run_no_arg ${ONE_ERROR} --stderr-re "^uopjit: PARAM 1 \\(float32\\*\\) has no buffer: give --arg 1=\\.\\.\\.$"
  -- ${T} run ${K} --arg 0=zeros:4 --var n=4)
uj_cli_test(run_arg_syntax ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 0: expected SLOT=V,V,\\.\\.\\., SLOT=zeros:N or SLOT=file:PATH$"
  -- ${T} run ${K} --arg 0)
uj_cli_test(run_arg_slot ${ONE_ERROR} --stderr-re "^uopjit: --arg x=1: 'x' is not a PARAM slot number$"
  -- ${T} run ${K} --arg x=1)
uj_cli_test(run_arg_unknown_slot ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 2=1: the kernel has no PARAM 2 \\(its PARAMs: 0, 1\\)$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --arg 2=1 --var n=4)
uj_cli_test(run_arg_twice ${ONE_ERROR} --stderr-re "^uopjit: --arg 0=zeros:2: PARAM 0 is given twice$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 0=zeros:2)
uj_cli_test(run_bad_value ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 1=1,2,x,4: value 3: expected a number but found 'x'$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,x,4 --var n=4)
uj_cli_test(run_empty_value ${ONE_ERROR} --stderr-re "^uopjit: --arg 1=1,,3: value 2: empty$"
  -- ${T} run ${K} --arg 0=zeros:3 --arg 1=1,,3 --var n=3)
uj_cli_test(run_value_range ${ONE_ERROR} --stderr-re "^uopjit: --arg 1=1,128: value 2: 128 out of range for int8$"
  -- ${T} run ${D}/kernel_types.uop --arg 1=1,128)
uj_cli_test(run_value_unsigned ${ONE_ERROR} --stderr-re "^uopjit: --arg 3=-1: value 1: -1 out of range for uint64$"
  -- ${T} run ${D}/kernel_types.uop --arg 3=-1)
uj_cli_test(run_value_bool ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 9=2: value 1: expected true or false but found '2'$"
  -- ${T} run ${D}/kernel_types.uop --arg 9=2)
uj_cli_test(run_value_int ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 1=1.5: value 1: expected an integer but found '1\\.5'$"
  -- ${T} run ${D}/kernel_types.uop --arg 1=1.5)
uj_cli_test(run_lanes ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 14=1,2,3: an element of float32x2 is 2 values: give a multiple of 2 values, not 3$"
  -- ${T} run ${D}/kernel_types.uop --arg 14=1,2,3)
uj_cli_test(run_value_param ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 12=1,2: PARAM 12 is a float64 value, not a buffer: give exactly 1 value, not 2$"
  -- ${T} run ${D}/kernel_types.uop --arg 12=1,2)
uj_cli_test(run_zeros_count ${ONE_ERROR} --stderr-re "^uopjit: --arg 0=zeros:-4: '-4' is not a count$"
  -- ${T} run ${K} --arg 0=zeros:-4)
uj_cli_test(run_file_missing ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 1=file:.*: cannot read '.*/missing\\.bin': No such file or directory$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=file:${D}/missing.bin)
uj_cli_test(run_file_size ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 1=file:.*: 3 bytes is not a whole number of float32 elements \\(4 bytes each\\)$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=file:${D}/three.bin)
uj_cli_test(run_too_few ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 0=zeros:3: PARAM 0 holds 3 float32 elements, but the kernel may access elements 0 to 3 "
  -- ${T} run ${K} --arg 0=zeros:3 --arg 1=1,2,3,4 --var n=4)
uj_cli_test(run_unknown_bounds ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 1=10,20,30: PARAM 1 holds 3 float32 elements, but the kernel may access elements -2147483648 to 2147483647 \\(--no-bounds-check"
  -- ${T} run ${D}/kernel_gather.uop --arg 0=zeros:3 --arg 1=10,20,30 --arg 2=2,0,1 --var n=3)
uj_cli_test(run_no_var ${ONE_ERROR}
  --stderr-re "^uopjit: variable n has no value: give --var n=INT \\(in \\[1, 1024\\]\\)$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4)
uj_cli_test(run_var_unknown ${ONE_ERROR}
  --stderr-re "^uopjit: --var m=1: the kernel has no variable 'm' \\(its variables: n\\)$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var m=1)
uj_cli_test(run_var_range ${ONE_ERROR} --stderr-re "^uopjit: --var n=0: n must be in \\[1, 1024\\]$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var n=0)
uj_cli_test(run_var_int ${ONE_ERROR} --stderr-re "^uopjit: --var n=4x: '4x' is not an integer$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var n=4x)
uj_cli_test(run_var_syntax ${ONE_ERROR} --stderr-re "^uopjit: --var n: expected NAME=INT$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var n)
uj_cli_test(run_var_twice ${ONE_ERROR} --stderr-re "^uopjit: --var n=2: n is given twice$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var n=4 --var n=2)
uj_cli_test(run_print_unknown ${ONE_ERROR}
  --stderr-re "^uopjit: --print 5: the kernel has no PARAM 5 \\(its PARAMs: 0, 1\\)$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var n=4 --print 5)
uj_cli_test(run_save_syntax ${ONE_ERROR} --stderr-re "^uopjit: --save 0: expected SLOT=FILE$"
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var n=4 --save 0)
uj_cli_test(run_save_unwritable ${ONE_ERROR} --stderr-re "^uopjit: cannot write '.*/no/such/dir/y\\.bin': "
  -- ${T} run ${K} --arg 0=zeros:4 --arg 1=1,2,3,4 --var n=4 --save 0=${OUT}/no/such/dir/y.bin)
uj_cli_test(run_not_kernel ${ONE_ERROR}
  --stderr-re "^uopjit: <command line>: kernel: the root is a DEFINE_VAR, not a SINK, END or STORE$"
  -- ${T} run -c "(DEFINE_VAR:int32 x 0 15)")
uj_cli_test(run_parse_error ${ONE_ERROR} --stderr-re "^uopjit: .*/parse_error\\.uop:4:1: unexpected end of input"
  -- ${T} run ${D}/parse_error.uop)
uj_cli_test(run_unreadable ${ONE_ERROR} --stderr-re "^uopjit: cannot read '.*/missing\\.uop': No such file or directory$"
  -- ${T} run ${D}/missing.uop)
uj_cli_test(run_only_option ${ONE_ERROR} --stderr-re "^uopjit: option '--arg' is for 'uopjit run'" -- ${T} --arg 0=1 ${K})
uj_cli_test(run_not_option ${ONE_ERROR} --stderr-re "^uopjit: option '--emit' does not apply to 'uopjit run'$"
  -- ${T} run --emit=ir ${K})
if(UJ_SCRIPT)
  uj_cli_test(run_terminal --status 1 --stdout-has "run: give the kernel as FILE, -c TEXT or '-' (stdin)"
    -- ${UJ_SCRIPT} -qec "'${T}' run --arg 0=1" /dev/null)
endif()

# ---- UJ_DEBUG: the library reports on stderr; stdout stays the same ----
set(RUN_ADD ${T} run ${K} --arg 0=zeros:2 --arg 1=1,2 --var n=2)
uj_cli_test(debug_1 --stdout "0=2.0,3.0"
  --stderr-re "^UJ_DEBUG: kernel: compiled in [0-9.]+ ms$" --stderr-re "^UJ_DEBUG: kernel: ran in [0-9.]+ ms$"
  --stderr-lines 2 -- env UJ_DEBUG=1 ${RUN_ADD})
uj_cli_test(debug_2 --stdout "0=2.0,3.0" --stderr-re "^UJ_DEBUG: UOps of kernel" --stderr-re "compiled in"
  -- env UJ_DEBUG=2 ${RUN_ADD})
uj_cli_test(debug_3 --stdout "0=2.0,3.0" --stderr-re "^UJ_DEBUG: LLVM IR of kernel" --stderr-re "define void @kernel"
  -- env UJ_DEBUG=3 ${RUN_ADD})
uj_cli_test(debug_4 --stdout "0=2.0,3.0" --stderr-re "^UJ_DEBUG: optimized LLVM IR of kernel" --stderr-re "compiled in"
  -- env UJ_DEBUG=4 ${RUN_ADD})
uj_cli_test(debug_emit --stdout-has ".visible .entry kernel(" --stderr-re "^UJ_DEBUG: UOps of kernel:$"
  --stderr-re "^UJ_DEBUG: LLVM IR of kernel:$" -- env UJ_DEBUG=3 ${T} --emit=ptx ${K})
uj_cli_test(debug_0 --stdout "0=2.0,3.0" --stderr-empty -- env UJ_DEBUG=0 ${RUN_ADD})

# ---- the tensor language (docs/language.md): scripts in test/data/lang ----
# Each NAME.ujs prints NAME.out exactly; the values are checked by hand
# (NumPy's layout: test/data/lang/print.ujs).
set(L ${CMAKE_CURRENT_SOURCE_DIR}/data/lang)
foreach(script arith create movement reduce unary nn print train dropout)
  uj_cli_test(lang_${script} --stdout-file ${L}/${script}.out --stderr-empty -- ${T} ${L}/${script}.ujs)
endforeach()
uj_cli_test(lang_command_line --stdout "tensor(shape=(2, 1), dtype=int32)\n[[3]\n [7]]" --stderr-empty
  -- ${T} -c "tensor([[1,2],[3,4]]) @ tensor([[1],[1]])")
uj_cli_test(example_tensors --stdout-file ${L}/example_tensors.out --stderr-empty
  -- ${T} ${PROJECT_SOURCE_DIR}/examples/tensors.ujs) # the main job's second half (scripts/setup.sh)
uj_cli_test(lang_stdin --stdin ${L}/arith.ujs --stdout-file ${L}/arith.out --stderr-empty -- ${T})
uj_cli_test(lang_stdin_dash --stdin ${L}/arith.ujs --stdout-file ${L}/arith.out -- ${T} -)
uj_cli_test(lang_stdin_pipe --stdout-file ${L}/arith.out -- sh -c "cat '${L}/arith.ujs' | '${T}'")
uj_cli_test(lang_output_file --rm ${OUT}/lang.txt --stdout-empty --stderr-empty --file ${OUT}/lang.txt "3\n(2,)"
  -- ${T} -o ${OUT}/lang.txt -c "1 + 2\nzeros(2).shape")
uj_cli_test(lang_statements --stdout "1\n2\n3" -- ${T} -c "x = 1\nx\n# a comment\ny = (x +\n 1)\ny\nx + \\\n y")
uj_cli_test(lang_npy --rm ${OUT}/t.npy --stderr-empty --file-head ${OUT}/t.npy 934e554d5059
  --stdout "tensor(shape=(2, 3), dtype=float32)\n[[0. 1. 2.]\n [3. 4. 5.]]\nfloat32\ntensor(shape=(2, 3), dtype=bool)\n[[ True  True  True]\n [ True  True  True]]"
  -- ${T} -c "x = arange(6.).reshape(2, 3)\nsave(x, '${OUT}/t.npy')\ny = load('${OUT}/t.npy')\ny\ny.dtype\nx == y")
uj_cli_test(lang_npy_int --rm ${OUT}/i.npy --stdout "tensor(shape=(2, 2), dtype=int32)\n[[1 2]\n [3 4]]"
  -- ${T} -c "save(tensor([[1, 2], [3, 4]]), '${OUT}/i.npy')\nload('${OUT}/i.npy')")
uj_cli_test(lang_commands --stderr-empty --stdout-has "1 kernel" --stdout-has "kernel 0 R_" --stdout-has "(SINK "
  --stdout-has "define void @R_" --stdout-has " ms (1 kernel)" --stdout-has "0 kernels"
  --stdout-has ":quit           leave" --stdout-lacks "not printed" -- ${T} ${L}/commands.ujs)
# ---- a tensor program's kernels as any stage, for any target (uj_tensor_emit) ----
set(P "x = rand(64, 64, seed=1)\nw = rand(64, 64, seed=2)")
uj_cli_test(lang_ptx --stderr-empty --stdout-has "4 kernels for sm_80" --stdout-has ".target sm_80"
  --stdout-has ".visible .entry R_64_64(" --stdout-has ".visible .entry E_64_64(" --stdout-lacks "tensor("
  -- ${T} -c "${P}\n:ptx sm_80 (x @ w).softmax(axis=1)")
uj_cli_test(lang_ptx_default --stdout-has "for sm_90" --stdout-has ".target sm_90" -- ${T} -c "${P}\n:ptx x.exp()")
uj_cli_test(lang_amdgcn --stderr-empty --stdout-has "1 kernel for gfx1100" --stdout-has ".amdhsa_kernel E_64_64"
  -- ${T} -c "${P}\n:amdgcn gfx1100 x.exp()")
uj_cli_test(lang_asm --stderr-empty --stdout-has "1 kernel for cpu-" --stdout-has "E_64_64:" -- ${T} -c "${P}\n:asm x.exp()")
uj_cli_test(lang_ir_gpu --stdout-has "for gfx942" --stdout-has "amdgcn-amd-amdhsa" -- ${T} -c "${P}\n:ir gfx942 x.sum()")
uj_cli_test(lang_list_gpu --stdout-has "for sm_90" --stdout-has "LOOP" -- ${T} -c "${P}\n:list sm_90 x.sum(axis=1)")
uj_cli_test(lang_asm_arch ${ONE_ERROR} --stderr-re "^uopjit: <command line>:3:1: :asm takes no arch \\(sm_80\\)$"
  -- ${T} -c "${P}\n:asm sm_80 x.exp()")
uj_cli_test(lang_ptx_bad_arch ${ONE_ERROR} --stderr-re "sm_70" -- ${T} -c "${P}\n:ptx sm_70 x.exp()")
uj_cli_test(emit_tensor_program --stderr-empty --stdout-has "4 kernels for sm_90" --stdout-has ".visible .entry R_64_1("
  --stdout-lacks "tensor(" -- ${T} --emit=ptx -c "${P}\n(x @ w).softmax(axis=1)")
uj_cli_test(emit_tensor_stdin --stdin ${L}/commands.ujs --stdout-has "kernel 0 R_" --stdout-has "(SINK "
  -- ${T} --emit=uops)
uj_cli_test(emit_tensor_arch --stdout-has "for gfx90a" --stdout-has ".amdhsa_kernel E_64_64"
  -- ${T} --emit=amdgcn --arch=gfx90a -c "${P}\nx.exp()")
uj_cli_test(emit_tensor_hsaco ${ONE_ERROR} --stderr-re "^uopjit: --emit=hsaco is one binary a kernel"
  -- ${T} --emit=hsaco -c "${P}\nx.exp()")
uj_cli_test(device_option_eval --stdout-has "tensor(shape=(), dtype=float32)" -- ${T} --device=EVAL -c "rand(4, seed=1).sum()")
uj_cli_test(device_cuda_absent ${ONE_ERROR} --stderr-re "^uopjit: cannot start a session: no CUDA device: "
  -- env UJ_CUDA_LIBRARY=/nonexistent/libcuda.so.1 ${T} --device=CUDA -c "1")
uj_cli_test(device_option_unknown ${ONE_ERROR} --stderr-re "^uopjit: cannot start a session: unknown device"
  -- ${T} --device=TPU -c "1")
uj_cli_test(device_ir ${ONE_ERROR} --stderr-re "^uopjit: --device is for the tensor language"
  -- ${T} --device=CPU ${K})

uj_cli_test(lang_kernels --stdout-has "3 kernels" --stdout-has "kernel 2 " --stdout-lacks "tensor(" -- ${T} -c ":kernels rand(4, 8).softmax(0)")
uj_cli_test(lang_prompt --stdin ${L}/repl.in --stderr-re "^uopjit: <stdin>:1:1: unknown name 'foo'$" --stderr-lines 1
  --stdout-has "uj> ... uj> " --stdout-has "4 6" --stdout-has "2 4" --stdout-has "6 8" --stdout-has "1 kernel"
  -- ${T} -i)
uj_cli_test(lang_help --stdout-has "usage: uopjit [-o FILE] [FILE | -c TEXT]" --stdout-has "--uops" -- ${T} --help)
uj_cli_test(lang_uops_option --stdout "(CONST:int32 3)" -- ${T} --uops -c "(ADD (CONST:int32 1) (CONST:int32 2))")
# 0-d tensors (a sum over every axis) with scalars and in where
uj_cli_test(lang_zero_dim --stderr-empty --stdout "tensor(shape=(), dtype=float32)\n4.0\ntensor(shape=(2,), dtype=float32)\n[3. 6.]\ntensor(shape=(2,), dtype=float32)\n[3.  0.5]"
  -- ${T} ${L}/zero_dim.ujs)

# ---- the tensor language: each kind of error is one line WHERE:LINE:COL: message, status 1 ----
set(C "<command line>")
uj_cli_test(lang_err_char ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:7: unexpected character '\\$'$" -- ${T} -c "x = 1 $ 2")
uj_cli_test(lang_err_string ${ONE_ERROR} --stderr-re "^uopjit: ${C}:2:5: unterminated string$" -- ${T} -c "1\nx = 'abc")
uj_cli_test(lang_err_syntax ${ONE_ERROR}
  --stderr-re "^uopjit: .*/err_syntax\\.ujs:4:1: expected ',' or '\\)' but found 'z'$" -- ${T} ${L}/err_syntax.ujs)
uj_cli_test(lang_err_syntax_c ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:3: expected the end of the statement but found 'b'$" -- ${T} -c "a b")
uj_cli_test(lang_err_expression ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:12: expected an expression but found '\\*'$" -- ${T} -c "zeros(2) + *")
uj_cli_test(lang_err_parse_first ${ONE_ERROR} --stderr-re "^uopjit: ${C}:2:1: expected an expression but found '\\)'$"
  -- ${T} -c "1 + 1\n)")
uj_cli_test(lang_err_name ${ONE_ERROR} --stderr-re "^uopjit: ${C}:2:5: unknown name 'y'$" -- ${T} -c "x = 1\nx + y")
uj_cli_test(lang_err_function ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:1: unknown function 'frob'$" -- ${T} -c "frob(1)")
uj_cli_test(lang_err_method ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:10: a tensor has no method 'frob'$"
  -- ${T} -c "zeros(2).frob()")
uj_cli_test(lang_err_attribute ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:10: 'relu' is a method: call it as \\.relu\\(\\)$"
  -- ${T} -c "zeros(2).relu")
uj_cli_test(lang_err_grad ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:10: grad: not a parameter: call \\.requires_grad\\(\\) first$"
  -- ${T} -c "zeros(2).grad")
uj_cli_test(lang_err_grad_none ${ONE_ERROR} --stderr-re "^uopjit: ${C}:2:3: grad: no grad yet: call loss\\.backward\\(\\) first$"
  -- ${T} -c "w = zeros(2).requires_grad()\nw.grad")
uj_cli_test(lang_err_backward ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:10: gradient: the loss \\(2,\\) has 2 elements: give a seed of its shape$" -- ${T} -c "zeros(2).backward()")
uj_cli_test(lang_err_param_int ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:26: requires_grad: a parameter must be a float tensor$" -- ${T} -c "arange(3, dtype='int32').requires_grad()")
uj_cli_test(lang_err_optimizer ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:1: optimizer: tensor 0 is not a parameter \\(requires_grad\\)$" -- ${T} -c "sgd([zeros(2)], lr=0.1)")
uj_cli_test(lang_err_optimizer_params ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:1: adamw: params must be a list of tensors, not an int$" -- ${T} -c "adamw(1, lr=0.1)")
uj_cli_test(lang_err_optimizer_method ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:2:3: frob: an optimizer has no method 'frob' \\(step, zero_grad, set_lr\\)$"
  -- ${T} -c "o = sgd([], lr=1)\no.frob()")
uj_cli_test(lang_err_dropout_p ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:1: dropout: p must be in \\[0, 1\\], not 1\\.5$" -- ${T} -c "dropout(zeros(2), 1.5)")
uj_cli_test(lang_err_dropout_p_negative ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:10: dropout: p must be in \\[0, 1\\], not -0\\.5$" -- ${T} -c "zeros(2).dropout(-0.5)")
uj_cli_test(lang_err_dropout_p_nan ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:2:1: dropout: p must be in \\[0, 1\\], not nan$" -- ${T} -c "n = 0.0 * 1e999\ndropout(zeros(2), n)")
uj_cli_test(lang_err_dropout_p_kind ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:1: dropout: p must be a number, not a string$" -- ${T} -c "dropout(zeros(2), 'a')")
uj_cli_test(lang_err_dropout_int ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:1: dropout: takes a float tensor$" -- ${T} -c "dropout(arange(3), 0.5)")
uj_cli_test(lang_err_manual_seed ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:1: manual_seed: seed must not be negative$" -- ${T} -c "manual_seed(-1)")
uj_cli_test(lang_err_arg_count ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:10: softmax: takes at most 1 argument \\(2 given\\)$" -- ${T} -c "zeros(2).softmax(0, 1)")
uj_cli_test(lang_err_arg_missing ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:1: conv2d: missing argument 'w'$"
  -- ${T} -c "conv2d(zeros(1, 1, 2, 2))")
uj_cli_test(lang_err_arg_kind ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:1: zeros: the shape must be ints or one list of ints, not a string$" -- ${T} -c "zeros('a')")
uj_cli_test(lang_err_arg_keyword ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:10: sum: unexpected keyword argument 'axes'$"
  -- ${T} -c "zeros(2).sum(axes=0)")
uj_cli_test(lang_err_dtype ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:10: cast: unknown dtype 'float33' \\(known: bool"
  -- ${T} -c "zeros(2).cast('float33')")
uj_cli_test(lang_err_operand ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:5: unsupported operand types for \\+: 'string' and 'int'$" -- ${T} -c "'a' + 1")
uj_cli_test(lang_err_zero_division ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:2: division by zero$" -- ${T} -c "1/0")
uj_cli_test(lang_err_library --status 1 --stdout "(2, 3)" --stderr-lines 1
  --stderr-re "^uopjit: .*/err_runtime\\.ujs:4:7: add: shapes \\(2, 3\\) and \\(4,\\) do not broadcast$"
  -- ${T} ${L}/err_runtime.ujs)
uj_cli_test(lang_err_library_call ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:13: reshape: cannot reshape \\(2, 3\\) \\(6 elements\\) to \\(4,\\)"
  -- ${T} -c "zeros(2, 3).reshape(4)")
uj_cli_test(lang_err_load ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:1: .*missing\\.npy.*No such file or directory$"
  -- ${T} -c "load('${OUT}/missing.npy')")
uj_cli_test(lang_err_command ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:1: unknown command ':frob' \\(try :help\\)$"
  -- ${T} -c ":frob")
uj_cli_test(lang_err_command_arg ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:10: :kernels needs a tensor, not an int$"
  -- ${T} -c ":kernels 1")
uj_cli_test(lang_err_stdin ${ONE_ERROR} --stdin ${L}/err_syntax.ujs
  --stderr-re "^uopjit: <stdin>:4:1: expected ',' or '\\)' but found 'z'$" -- ${T})

# ---- hostile input (docs/tool.md and docs/language.md, "Limits"): no crash, no silent loss ----
# Deep and long programs come from gen_deep.sh KIND N on stdin.
set(G ${CMAKE_CURRENT_SOURCE_DIR}/gen_deep.sh)
set(DEEP_ERR "^uopjit: <stdin>:1:[0-9]+: nested too deeply: more than 1000 levels of brackets, calls and '\\*\\*' inside one another$")
function(uj_deep_test name kind n)
  uj_cli_test(${name} ${ARGN} -- sh -c "'${G}' ${kind} ${n} | '${T}'")
endfunction()
uj_deep_test(lang_deep_parens parens 1000 --stdout "7" --stderr-empty)
uj_deep_test(lang_deep_lists lists 1000 --stdout-has "[[[[7]]]]" --stderr-empty)
uj_deep_test(lang_deep_calls calls 999 --stdout "tensor(shape=(1,), dtype=float32)\n[1.]" --stderr-empty)
uj_deep_test(lang_deep_pow pow 1000 --stdout "7" --stderr-empty)
uj_deep_test(lang_err_deep_parens parens 1001 ${ONE_ERROR} --stderr-re "^uopjit: <stdin>:1:1002: nested too deeply")
uj_deep_test(lang_err_deep_parens_15k parens 15000 ${ONE_ERROR} --stderr-re "${DEEP_ERR}")
uj_deep_test(lang_err_deep_lists lists 1001 ${ONE_ERROR} --stderr-re "${DEEP_ERR}")
uj_deep_test(lang_err_deep_calls calls 1000 ${ONE_ERROR} --stderr-re "^uopjit: <stdin>:1:4006: nested too deeply")
uj_deep_test(lang_err_deep_pow pow 1001 ${ONE_ERROR} --stderr-re "${DEEP_ERR}")
# chains are loops in the parser and the evaluator: any length
uj_deep_test(lang_long_minus minus 100000 --stdout "7" --stderr-empty)
uj_deep_test(lang_long_sum sum 100000 --stdout "100000" --stderr-empty)
uj_deep_test(lang_long_methods methods 40000 --stdout "tensor(shape=(), dtype=float32)\n2.0" --stderr-empty)
uj_deep_test(lang_long_statements assign 20000 --stdout "tensor(shape=(2,), dtype=float32)\n[20001. 20001.]" --stderr-empty)

# Lost output: every output path reports a failed write, status 1.
set(FULL "No space left on device$")
uj_cli_test(lang_err_full_stdout --status 1 --stderr-lines 1 --stderr-re "^uopjit: cannot write '<stdout>': ${FULL}"
  -- sh -c "'${T}' -c 'ones(3)' > /dev/full")
uj_cli_test(lang_err_full_file ${ONE_ERROR} --stderr-re "^uopjit: cannot write '/dev/full': ${FULL}"
  -- ${T} -o /dev/full -c "ones(3)")
uj_cli_test(lang_err_full_kernels ${ONE_ERROR} --stderr-re "^uopjit: cannot write '/dev/full': ${FULL}"
  -- ${T} -o /dev/full -c ":kernels ones(3) + 1")
uj_cli_test(lang_err_full_help ${ONE_ERROR} --stderr-re "^uopjit: cannot write '/dev/full': ${FULL}" -- ${T} -o /dev/full -c ":help")
uj_cli_test(lang_err_full_stops --status 1 --stderr-lines 1 --stderr-re "cannot write '<stdout>': ${FULL}"
  -- sh -c "'${T}' -c 'print(1)\nsave(ones(2), \"${OUT}/after_full.npy\")' > /dev/full; test ! -e '${OUT}/after_full.npy'")
uj_cli_test(lang_err_closed_stdout --status 1 --stderr-lines 1 --stderr-re "^uopjit: cannot write '<stdout>': Bad file descriptor$"
  -- sh -c "'${T}' -c 'ones(3)' >&-")
uj_cli_test(lang_err_full_prompt --status 1 --stderr-re "^uopjit: cannot write '<stdout>': ${FULL}"
  -- sh -c "echo 'ones(2)' | '${T}' -i > /dev/full")
uj_cli_test(err_full_prompt --status 1 --stderr-re "^uopjit: cannot write '<stdout>': ${FULL}"
  -- sh -c "echo '(CONST:int32 1)' | '${T}' -i --uops > /dev/full")
uj_cli_test(err_full_stdout --status 1 --stderr-re "^uopjit: cannot write '<stdout>': ${FULL}"
  -- sh -c "'${T}' --uops -c '(CONST:int32 1)' > /dev/full")
# a statement that fails prints nothing, not a header (the allocation fails under ASan too)
uj_cli_test(lang_err_prints_nothing --status 1 --stdout "1"
  --stderr-re "^uopjit: <command line>:2:1: CPU: cannot allocate a buffer of 4398046511104 bytes$"
  -- ${T} -c "print(1)\nzeros(2**40)")
set_tests_properties(cli_lang_err_prints_nothing PROPERTIES
  ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:allocator_may_return_null=1")

# Inputs that never end: read up to a limit, then a clear error.
uj_cli_test(lang_err_endless ${ONE_ERROR}
  --stderr-re "^uopjit: cannot read '/dev/zero': longer than 64 MiB, the most it may be$" -- ${T} /dev/zero)
uj_cli_test(lang_err_endless_stdin ${ONE_ERROR} --stdin /dev/zero
  --stderr-re "^uopjit: cannot read '<stdin>': longer than 64 MiB" -- ${T})
uj_cli_test(lang_err_endless_prompt --status 1 --stdin /dev/zero
  --stderr-re "^uopjit: <stdin>: a line longer than 64 MiB, the most it may be$" -- ${T} -i)
uj_cli_test(err_endless ${ONE_ERROR} --stderr-re "^uopjit: cannot read '/dev/zero': longer than 64 MiB" -- ${T} --uops /dev/zero)
uj_cli_test(err_endless_prompt --status 1 --stdin /dev/zero --stderr-re "^uopjit: <stdin>: a line longer than 64 MiB" -- ${T} -i --uops)
uj_cli_test(run_err_endless_file ${ONE_ERROR}
  --stderr-re "^uopjit: --arg 1=file:/dev/zero: cannot read '/dev/zero': longer than 64 MiB, the most it may be$"
  -- ${T} run ${D}/kernel_add.uop --arg 0=zeros:4 --arg 1=file:/dev/zero --var n=4)

# A NUL byte is an error at its place, like any byte that is not text; nothing runs.
uj_cli_test(lang_err_nul ${ONE_ERROR} --stderr-re "^uopjit: .*/nul_byte\\.ujs:3:6: unexpected byte 0x00 \\(a NUL: a program is text\\)$"
  -- ${T} ${L}/nul_byte.ujs)
uj_cli_test(lang_err_nul_stdin ${ONE_ERROR} --stdin ${L}/nul_byte.ujs --stderr-re "^uopjit: <stdin>:3:6: unexpected byte 0x00" -- ${T})
uj_cli_test(err_nul ${ONE_ERROR} --stderr-re "^uopjit: .*/nul_byte\\.uop:2:19: unexpected byte 0x00" -- ${T} ${D}/nul_byte.uop)
uj_cli_test(lang_err_nul_prompt --stdin ${L}/nul_byte.ujs --stderr-re "^uopjit: <stdin>:1:6: unexpected byte 0x00"
  --stderr-re "^uopjit: <stdin>:1:7: unknown name 'y'$" --stderr-lines 2 --stdout-has "[2. 2.]" -- ${T} -i) # the entry dropped

# Quiet wrong answers and sizes that wrap: errors naming the op.
uj_cli_test(lang_err_size_wrap ${ONE_ERROR}
  --stderr-re "^uopjit: ${C}:1:1: zeros: shape \\(0, 4611686018427387904\\) is too large: its sizes, a 0 counted as 1, multiply past 2\\^40$"
  -- ${T} -c "zeros(0, 2**62).sum(axis=0)")
uj_cli_test(lang_err_size_expand ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:13: expand: shape \\(2, 1099511627776\\) is too large: more than 2\\^40 elements$"
  -- ${T} -c "zeros(2, 1).expand(2, 2**40)")
uj_cli_test(lang_numel_large --stdout "1099511627776" --stderr-empty -- ${T} -c "zeros(2**20, 2**20).numel()")
uj_cli_test(lang_err_argmax_empty ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:10: argmax: the tensor is empty: the argmax of nothing$"
  -- ${T} -c "zeros(0).argmax()")
uj_cli_test(lang_err_groups ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:1: conv2d: groups must be at least 1, not 0$"
  -- ${T} -c "conv2d(ones(1, 2, 4, 4), ones(2, 2, 3, 3), groups=0)")
uj_cli_test(lang_err_axis_wrap ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:12: transpose: axis 4294967296 is out of range$"
  -- ${T} -c "ones(2, 3).transpose(2**32, 1)") # not axis 0, which (int) 2^32 is
uj_cli_test(lang_err_axis_wrap_cat ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:1: cat: axis -4294967296 is out of range$"
  -- ${T} -c "cat(ones(2), ones(2), axis=-2**32)")
uj_cli_test(lang_scalar_fits --stdout "tensor(shape=(2,), dtype=int16)\n[301 302]" -- ${T} -c "tensor([1, 2]).cast('int8') + 300")
uj_cli_test(lang_pow_huge_exponent --stdout "1\n-1\n-9223372036854775808" --stderr-empty -- ${T} -c "1**2**62\n(-1)**(2**62+1)\n(-2)**63")
uj_cli_test(lang_err_pow_overflow ${ONE_ERROR} --stderr-re "^uopjit: ${C}:1:2: integer overflow$" -- ${T} -c "3**40")
uj_cli_test(err_shape_too_large ${ONE_ERROR} --stderr-re "EXPAND of shape \\(4294967296, 4294967296\\): too large"
  -- ${T} --uops -c "(EXPAND 4294967296 4294967296 (RESHAPE 1 1 (CONST:int8 1)))")

# ---- the lowered list: --emit=list (CPU, or a GPU with --arch) ----
uj_cli_test(emit_list --stdout-has "  %6 = PHI ADD:float32 in %5 from identity" --stdout-has "ENDLOOP %5 (%6 <- %12)"
  --stdout-has "%1 = LOOP loop 0 < %0 grid" --stderr-empty
  -- ${T} --emit=list -c "%i = (RANGE loop 0 (CONST:int32 5))\n%j = (RANGE reduce 1 (CONST:int32 37))\n(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 37)) %j))) %j))))")
uj_cli_test(emit_list_gpu --stdout-has "BARRIER workgroup" --stderr-empty
  -- ${T} --emit=list --arch=sm_90 ${D}/workgroup_pair.uop)

# ---- the device: UJ_DEVICE picks the tensor language's session ----
uj_cli_test(device_unknown ${ONE_ERROR} --stderr-re "UJ_DEVICE names an unknown device"
  -- env UJ_DEVICE=NOPE ${T} -c "1 + 1")
uj_cli_test(device_eval --stdout-has "[1. 1. 1.]" --stderr-empty
  -- env UJ_DEVICE=EVAL ${T} -c "tensor([1.0, 2.0, 3.0]).softmax(axis=0) * 0 + 1")

unset(D)
unset(T)
unset(OUT)
unset(ONE_ERROR)
unset(K)
unset(TYPES_ARGS)
unset(RUN_ADD)
unset(L)
unset(C)
unset(G)
unset(DEEP_ERR)
unset(FULL)

