# Link-time optimisation for the programs whose speed ethx measures: `ethx` (the simulator,
# docs/simulator.md "Round 10": about a tenth fewer instructions per frame), and the emulator's
# ethx-switch and ethx-node. Release builds with GCC only.
#
# Every object is compiled "fat": GCC's intermediate form beside the ordinary code. A program
# marked with ethx_link_time_optimise() is linked from the intermediate form, as one program;
# every other link (the tests, the guest tools, the QEMU device's archive) gets -fno-lto and
# uses the ordinary code, so it costs no more than before. Without -fno-lto, GCC's linker plugin
# would optimise any link of these objects whole, the slow way.
option(ETHX_LTO "Link ethx, ethx-switch and ethx-node with link-time optimisation (GCC, Release)"
       ON)
set(ETHX_LTO_ACTIVE OFF)
if(ETHX_LTO AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_BUILD_TYPE STREQUAL "Release"
   AND NOT ETHX_SANITIZE)
  set(ETHX_LTO_ACTIVE ON)
  add_compile_options(-flto=auto -ffat-lto-objects)
  # -fno-lto anywhere on a link line wins over -flto, so it goes only on the other links.
  add_link_options($<$<NOT:$<BOOL:$<TARGET_PROPERTY:ETHX_LINK_TIME_OPTIMISED>>>:-fno-lto>)
endif()

# Links `target` from the objects' intermediate form. GCC 12 then inlines libstdc++'s std::string
# across files and reports -Wstringop-overflow inside it (bounds past the largest object size:
# the same family as GCC bug 105651, see cmake/warnings.cmake); each file was already checked
# for it when compiled, so the link does not repeat the warning.
function(ethx_link_time_optimise target)
  if(ETHX_LTO_ACTIVE)
    set_target_properties(${target} PROPERTIES ETHX_LINK_TIME_OPTIMISED ON)
    target_link_options(${target} PRIVATE -flto=auto -Wno-stringop-overflow)
  endif()
endfunction()
