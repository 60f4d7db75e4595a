# One folder, one library: ethx_library(NAME DEPENDS lib...) builds every *.cpp directly in the
# calling folder (not its subfolders, which are libraries of their own; not *_main.cpp, which
# are programs) into a static library NAME that links the libraries it DEPENDS on. A folder
# with no sources gives an interface library. fabric/tools/check-layers.py checks that every
# #include crosses only into folders reached through DEPENDS.
function(ethx_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  list(FILTER sources EXCLUDE REGEX ".*_main\\.cpp$")
  if(sources)
    add_library(${name} STATIC ${sources})
    target_include_directories(${name} PUBLIC ${ETHX_ROOT})
    target_link_libraries(${name} PUBLIC ${ARG_DEPENDS} PRIVATE ethx_warnings)
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${ETHX_ROOT})
    target_link_libraries(${name} INTERFACE ${ARG_DEPENDS})
  endif()
endfunction()
