# UjInstall.cmake — the libraries uopjit installs, and what `cmake --install`
# puts where (docs/install.md).
#
# In: the object library uopjit_objects (every file of lib/ and backends/).
# Out: uopjit_shared (libuopjit.so.MAJOR.MINOR, exporting the uj_ API alone:
# cmake/uopjit.map), uopjit_static (libuopjit.a: one relocatable object
# whose internal symbols are made local, so a program linking it sees the
# uj_ API alone too), UJ_TOOL_LIBRARY (what the tool links), and install
# rules for both libraries, the headers, the tool, its man page, uopjit.pc
# and the CMake package uopjitConfig.cmake (imported targets uopjit::uopjit
# and uopjit::uopjit_static).
#
# A UJ_LLVM_STATIC build (LLVM inside one shared library, carried to the GPU
# machine) links the tool to the build's own library and installs nothing.
if(UJ_LLVM_STATIC)
  set(UJ_TOOL_LIBRARY uopjit)
  return()
endif()
include(GNUInstallDirs)

# While the major version is 0, every minor version may change the ABI:
# the soname carries both (libuopjit.so.0.1).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(UJ_SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
else()
  set(UJ_SOVERSION ${PROJECT_VERSION_MAJOR})
endif()

set(UJ_EXPORT_MAP ${CMAKE_CURRENT_LIST_DIR}/uopjit.map)
add_library(uopjit_shared SHARED $<TARGET_OBJECTS:uopjit_objects>)
set_target_properties(uopjit_shared PROPERTIES OUTPUT_NAME uopjit
  VERSION ${PROJECT_VERSION} SOVERSION ${UJ_SOVERSION}
  LINK_DEPENDS ${UJ_EXPORT_MAP} LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/dist)
target_include_directories(uopjit_shared PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
target_link_libraries(uopjit_shared PUBLIC m Threads::Threads PRIVATE uj::llvm)
target_link_options(uopjit_shared PRIVATE -Wl,--version-script=${UJ_EXPORT_MAP})
if(NOT UJ_SANITIZE AND NOT UJ_FUZZ) # a sanitized library leaves the runtime to the program
  target_link_options(uopjit_shared PRIVATE -Wl,--no-undefined)
endif()
set(UJ_TOOL_LIBRARY uopjit_shared)

# The static library: `ld -r` joins the objects into one, in which objcopy
# keeps uj_* global and makes the rest local; a program linking it can then
# define its own mem_read or pool_new.
set(UJ_STATIC_DIR ${CMAKE_BINARY_DIR}/dist)
set(UJ_STATIC_LIB ${UJ_STATIC_DIR}/libuopjit.a)
add_custom_command(OUTPUT ${UJ_STATIC_LIB}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${UJ_STATIC_DIR}
  COMMAND ${CMAKE_LINKER} -r -o ${UJ_STATIC_DIR}/uopjit.o $<TARGET_OBJECTS:uopjit_objects>
  COMMAND ${CMAKE_OBJCOPY} --wildcard --keep-global-symbol=uj_* ${UJ_STATIC_DIR}/uopjit.o
  COMMAND ${CMAKE_COMMAND} -E rm -f ${UJ_STATIC_LIB}
  COMMAND ${CMAKE_AR} rcs ${UJ_STATIC_LIB} ${UJ_STATIC_DIR}/uopjit.o
  DEPENDS uopjit_objects $<TARGET_OBJECTS:uopjit_objects>
  COMMAND_EXPAND_LISTS VERBATIM
  COMMENT "Linking libuopjit.a (the uj_ API global, the rest local)")
add_custom_target(uopjit_static ALL DEPENDS ${UJ_STATIC_LIB})

# What a program linking the static library needs besides it: LLVM's
# libraries, libm, pthreads, libdl.
execute_process(COMMAND ${LLVM_CONFIG} --libs --link-shared
  OUTPUT_VARIABLE UJ_LLVM_LIBS OUTPUT_STRIP_TRAILING_WHITESPACE)
set(UJ_STATIC_LINK "-L${UJ_LLVM_LIBDIR} ${UJ_LLVM_LIBS} -lm -lpthread -ldl")

install(TARGETS uopjit_shared
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development)
install(FILES ${UJ_STATIC_LIB} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/uopjit
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
configure_file(${PROJECT_SOURCE_DIR}/docs/uopjit.1.in ${CMAKE_BINARY_DIR}/dist/uopjit.1 @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/dist/uopjit.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

set(UJ_PKGCONFIG ${CMAKE_BINARY_DIR}/dist/uopjit.pc)
file(RELATIVE_PATH UJ_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" UJ_PC_TO_PREFIX "${UJ_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/uopjit.pc.in ${UJ_PKGCONFIG} @ONLY)
install(FILES ${UJ_PKGCONFIG} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

include(CMakePackageConfigHelpers)
set(UJ_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/uopjit)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/uopjitConfig.cmake.in
  ${CMAKE_BINARY_DIR}/dist/uopjitConfig.cmake INSTALL_DESTINATION ${UJ_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/dist/uopjitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/dist/uopjitConfig.cmake
  ${CMAKE_BINARY_DIR}/dist/uopjitConfigVersion.cmake DESTINATION ${UJ_CMAKE_DIR})
