# One static library per layer (pagedserve_<layer>), linked PRIVATE to the layers it uses, and a
# build step (tools/layer_check) every layer library waits for, which fails on an include its layer
# may not reach. cmake/layer_table.cmake declares the layers; this file only builds them.

# pagedserve_third_party(<name> PREFIXES <include prefix>... TARGETS <imported target>...)
# A third-party library as the layer rules name it: the headers that are its (<boost/asio/...>)
# and what a layer that may use it links.
function(pagedserve_third_party name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "PREFIXES;TARGETS")
  set_property(GLOBAL APPEND PROPERTY pagedserve_third_party_names ${name})
  set_property(GLOBAL PROPERTY pagedserve_third_party_${name}_prefixes ${arg_PREFIXES})
  set_property(GLOBAL PROPERTY pagedserve_third_party_${name}_targets ${arg_TARGETS})
endfunction()

# pagedserve_layer(<name> FILES <pattern>... [USES <layer>...] [THIRD_PARTY <name>...]
#                  [PROGRAM_SOURCES <file>...])
# FILES: root-relative paths or globs of the .cpp/.hpp files the layer owns. A file belongs to the
# layer that names it exactly, else to the first layer (in declaration order) whose glob matches
# it, so a lower layer can take single files out of a higher layer's folder.
# USES: every layer whose headers the layer's files may reach, directly or through other headers.
# PROGRAM_SOURCES: owned files (the rules apply) that are a program's, not the library's (main()).
function(pagedserve_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "FILES;USES;THIRD_PARTY;PROGRAM_SOURCES")
  set_property(GLOBAL APPEND PROPERTY pagedserve_layers ${name})
  foreach(key FILES USES THIRD_PARTY PROGRAM_SOURCES)
    set_property(GLOBAL PROPERTY pagedserve_layer_${name}_${key} ${arg_${key}})
  endforeach()
endfunction()

# pagedserve_layer_allow(<layer> <root-relative header>): a known violation, tolerated until the work
# that removes it lands. The layer's files may reach that header and everything it includes.
function(pagedserve_layer_allow layer header)
  set_property(GLOBAL APPEND PROPERTY pagedserve_layer_allowed "allow ${layer} ${header}")
endfunction()

# The compile options a library source takes from its path: the sanitizer trees build compute code
# at -O1, and each SIMD variant gets the instruction sets its file-name suffix names (called only
# after run-time CPU detection, src/kernels/dispatch.cpp).
function(pagedserve_source_flags file)
  if(NOT PAGEDSERVE_SANITIZE STREQUAL "" AND file MATCHES "/src/(kernels|model|sampling)/")
    set_property(SOURCE ${file} APPEND PROPERTY COMPILE_OPTIONS -O1)
  endif()
  if(file MATCHES "_avx512_bf16\\.cpp$")
    set_property(SOURCE ${file} APPEND PROPERTY COMPILE_OPTIONS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mfma -mavx2)
  elseif(file MATCHES "_avx512_vnni\\.cpp$")
    set_property(SOURCE ${file} APPEND PROPERTY COMPILE_OPTIONS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma -mavx2)
  elseif(file MATCHES "_avx2_vnni\\.cpp$")
    set_property(SOURCE ${file} APPEND PROPERTY COMPILE_OPTIONS -mavx2 -mfma -mavxvnni)
  elseif(file MATCHES "_avx512\\.cpp$")
    set_property(SOURCE ${file} APPEND PROPERTY COMPILE_OPTIONS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mavx2)
  elseif(file MATCHES "_avx2\\.cpp$")
    set_property(SOURCE ${file} APPEND PROPERTY COMPILE_OPTIONS -mavx2 -mfma)
  endif()
endfunction()

# Links a target as a member of a layer: the layers and third-party libraries the layer may use.
function(pagedserve_link_as_layer target layer)
  get_property(uses GLOBAL PROPERTY pagedserve_layer_${layer}_USES)
  get_property(third_party GLOBAL PROPERTY pagedserve_layer_${layer}_THIRD_PARTY)
  foreach(used ${uses})
    target_link_libraries(${target} PRIVATE pagedserve_${used})
  endforeach()
  foreach(tp ${third_party})
    get_property(tp_targets GLOBAL PROPERTY pagedserve_third_party_${tp}_targets)
    target_link_libraries(${target} PRIVATE ${tp_targets})
  endforeach()
  target_link_libraries(${target} PRIVATE Threads::Threads)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR})
endfunction()

# Every layer's files: exact names first, then globs in declaration order (see pagedserve_layer).
# Sets pagedserve_layer_<name>_owned (root-relative) in the caller for every layer.
function(pagedserve_layers_resolve_files)
  get_property(layers GLOBAL PROPERTY pagedserve_layers)
  set(claimed "")
  foreach(pass exact glob)
    foreach(layer ${layers})
      get_property(patterns GLOBAL PROPERTY pagedserve_layer_${layer}_FILES)
      foreach(pattern ${patterns})
        if(pattern MATCHES "[*?[]")
          if(pass STREQUAL "exact")
            continue()
          endif()
          file(GLOB matches CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/${pattern})
          list(FILTER matches INCLUDE REGEX "\\.(cpp|hpp|h)$")
        elseif(pass STREQUAL "glob")
          continue()
        elseif(NOT EXISTS ${CMAKE_SOURCE_DIR}/${pattern})
          message(FATAL_ERROR "layer ${layer}: ${pattern} does not exist (cmake/layer_table.cmake)")
        else()
          set(matches ${pattern})
        endif()
        foreach(f ${matches})
          if(NOT f IN_LIST claimed)
            list(APPEND claimed ${f})
            list(APPEND owned_${layer} ${f})
          endif()
        endforeach()
      endforeach()
    endforeach()
  endforeach()
  # Every file of the library folders belongs to some layer, so a new folder cannot slip past the rules.
  file(GLOB_RECURSE all_files CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR}
    ${CMAKE_SOURCE_DIR}/src/*.cpp ${CMAKE_SOURCE_DIR}/src/*.hpp ${CMAKE_SOURCE_DIR}/src/*.h
    ${CMAKE_SOURCE_DIR}/actors/*.cpp ${CMAKE_SOURCE_DIR}/actors/*.hpp ${CMAKE_SOURCE_DIR}/include/*.hpp)
  list(REMOVE_ITEM all_files ${claimed})
  if(all_files)
    list(JOIN all_files ", " unowned)
    message(FATAL_ERROR "no layer owns ${unowned}: add the file or its folder to a layer in cmake/layer_table.cmake")
  endif()
  foreach(layer ${layers})
    set(pagedserve_layer_${layer}_owned ${owned_${layer}} PARENT_SCOPE)
  endforeach()
endfunction()

# Creates every layer library, writes build/layers.table and the build step that checks it.
function(pagedserve_layers_build)
  pagedserve_layers_resolve_files()
  get_property(layers GLOBAL PROPERTY pagedserve_layers)
  get_property(third_party_names GLOBAL PROPERTY pagedserve_third_party_names)
  get_property(allowed GLOBAL PROPERTY pagedserve_layer_allowed)

  set(table "# Written by cmake/layers.cmake from cmake/layer_table.cmake; read by tools/layer_check.\n")
  string(APPEND table "include_dir include\ninclude_dir src\ninclude_dir .\n")
  foreach(tp ${third_party_names})
    get_property(prefixes GLOBAL PROPERTY pagedserve_third_party_${tp}_prefixes)
    list(JOIN prefixes " " prefixes)
    string(APPEND table "third_party ${tp} ${prefixes}\n")
  endforeach()
  set(checked_files "")
  foreach(layer ${layers})
    get_property(uses GLOBAL PROPERTY pagedserve_layer_${layer}_USES)
    get_property(third_party GLOBAL PROPERTY pagedserve_layer_${layer}_THIRD_PARTY)
    get_property(program_sources GLOBAL PROPERTY pagedserve_layer_${layer}_PROGRAM_SOURCES)
    list(JOIN uses " " uses_text)
    list(JOIN third_party " " third_party_text)
    string(APPEND table "layer ${layer} uses ${uses_text} third_party ${third_party_text}\n")
    set(sources "")
    foreach(f ${pagedserve_layer_${layer}_owned})
      string(APPEND table "file ${layer} ${f}\n")
      list(APPEND checked_files ${CMAKE_SOURCE_DIR}/${f})
      if(NOT f IN_LIST program_sources)
        list(APPEND sources ${CMAKE_SOURCE_DIR}/${f})
        pagedserve_source_flags(${CMAKE_SOURCE_DIR}/${f})
      endif()
    endforeach()
    add_library(pagedserve_${layer} STATIC ${sources})
    pagedserve_link_as_layer(pagedserve_${layer} ${layer})
    add_dependencies(pagedserve_${layer} pagedserve_layer_check)
  endforeach()
  foreach(a ${allowed})
    string(APPEND table "${a}\n")
  endforeach()

  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/layers.table CONTENT "${table}" @ONLY)
  set(stamp ${CMAKE_BINARY_DIR}/layer_check.stamp)
  add_custom_command(OUTPUT ${stamp}
    COMMAND layer_check --root ${CMAKE_SOURCE_DIR} --table ${CMAKE_BINARY_DIR}/layers.table --stamp ${stamp}
    DEPENDS layer_check ${CMAKE_BINARY_DIR}/layers.table ${checked_files}
    COMMENT "Checking every include against the layer rules (cmake/layer_table.cmake)"
    VERBATIM)
  add_custom_target(pagedserve_layer_check DEPENDS ${stamp})
endfunction()
