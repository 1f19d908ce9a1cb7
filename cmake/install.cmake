# Where the program finds what it ships (src/share_dir.hpp): installed, <prefix>/bin/pagedserve beside
# <prefix>/share/pagedserve/{web,models}; in this build tree, <build>/share/pagedserve, whose entries
# link to the source tree's web/ and default model, so an edited page is served without a rebuild.
include(GNUInstallDirs)
set(pagedserve_default_model tests/data/models/stories260K.bin tests/data/models/tok512.bin)
set(pagedserve_build_share ${CMAKE_BINARY_DIR}/share/pagedserve)
file(MAKE_DIRECTORY ${pagedserve_build_share}/models)
file(CREATE_LINK ${CMAKE_SOURCE_DIR}/web ${pagedserve_build_share}/web SYMBOLIC)
foreach(f IN LISTS pagedserve_default_model)
  get_filename_component(name ${f} NAME)
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${f} ${pagedserve_build_share}/models/${name} SYMBOLIC)
endforeach()
file(CREATE_LINK ${CMAKE_SOURCE_DIR}/tests/data/licenses/llama2.c-MIT.txt
  ${pagedserve_build_share}/models/stories260K-LICENSE.txt SYMBOLIC)

install(TARGETS pagedserve RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY web/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pagedserve/web)
install(FILES ${pagedserve_default_model} DESTINATION ${CMAKE_INSTALL_DATADIR}/pagedserve/models)
install(FILES tests/data/licenses/llama2.c-MIT.txt DESTINATION ${CMAKE_INSTALL_DATADIR}/pagedserve/models
  RENAME stories260K-LICENSE.txt)
install(FILES LICENSE README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/pagedserve)
