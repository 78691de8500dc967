# cmake --install: what a program outside this tree needs to use the codec,
# the market-data feed's codec, the subscriber's book and the order-entry
# client, and nothing else.
#
#   include/orderwire/{base,codec,feed,marketdata,auth,net,client}/...h
#       public headers, at the paths the sources use:
#       -I<prefix>/include/orderwire, then #include "client/session.h"
#   lib/liborderwire_{codec,feed,marketdata,auth,net,client}.a   static
#       libraries
#   lib/cmake/orderwire/                                  the CMake package:
#       find_package(orderwire CONFIG REQUIRED) gives orderwire::base,
#       orderwire::codec, orderwire::feed, orderwire::marketdata,
#       orderwire::auth, orderwire::net, orderwire::client
#   lib/pkgconfig/orderwire-codec.pc                      the codec for
#       pkg-config
#   bin/orderwire                                         the binary
#
# Not installed: engine/, journal/, config/, state/, service/, replication/
# and cluster/ (some public headers reach into their internal/ folders; they
# are the service's parts, not API for other programs yet), every internal/
# header, codec/testing/, jsonl/ (the JSON Lines form is the CLI's and the
# tests'), tests/.
#
# The list of headers is checked, not guessed: scripts/check_installed_
# headers.sh compiles each installed header alone against the installed
# tree (a header that includes one missing from this list fails) and fails
# on any internal/ or non-API header installed; scripts/check_install.sh
# builds examples/trader against the installed package.

include(CMakePackageConfigHelpers)

set(ORDERWIRE_PUBLIC_HEADERS
  # what client/session.h reaches, and base/clock.h for Poll's `now`
  base/clock.h
  base/latency_histogram.h
  codec/command.h
  codec/datagram.h
  codec/error.h
  codec/frame.h
  codec/kind_table.h
  codec/layout.h
  codec/messages.h
  codec/result.h
  codec/strong.h
  codec/types.h
  codec/wire.h
  # the market-data feed's packets and messages (docs/MARKETDATA.md)
  feed/builder.h
  feed/kind_table.h
  feed/messages.h
  feed/packet.h
  feed/types.h
  # the subscriber and its L3 book (docs/MARKETDATA.md "A subscriber")
  marketdata/book.h
  marketdata/feed_socket.h
  marketdata/side_levels.h
  marketdata/subscriber.h
  auth/mac.h
  net/udp.h
  client/session.h
  client/run_client.h
)
foreach(header IN LISTS ORDERWIRE_PUBLIC_HEADERS)
  cmake_path(GET header PARENT_PATH folder)
  install(FILES ${PROJECT_SOURCE_DIR}/${header}
          DESTINATION ${ORDERWIRE_INSTALL_INCLUDEDIR}/${folder}
          COMPONENT orderwire_headers)
endforeach()

# The installed targets and their names in the package (orderwire::codec,
# not orderwire::orderwire_codec).
set(ORDERWIRE_INSTALLED_LIBRARIES
  orderwire_base orderwire_codec orderwire_feed orderwire_marketdata
  orderwire_auth orderwire_net orderwire_client)
foreach(library IN LISTS ORDERWIRE_INSTALLED_LIBRARIES)
  string(REPLACE "orderwire_" "" export_name ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${export_name})
endforeach()
install(TARGETS ${ORDERWIRE_INSTALLED_LIBRARIES}
        EXPORT orderwire-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
                COMPONENT orderwire_development)
install(TARGETS orderwire
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
                COMPONENT orderwire_runtime)

set(ORDERWIRE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/orderwire)
install(EXPORT orderwire-targets
        NAMESPACE orderwire::
        DESTINATION ${ORDERWIRE_CMAKE_DIR}
        COMPONENT orderwire_development)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/orderwire-config.cmake.in
  ${PROJECT_BINARY_DIR}/orderwire-config.cmake
  INSTALL_DESTINATION ${ORDERWIRE_CMAKE_DIR})
# 0.x: a minor release may change the API, so only the same major.minor
# satisfies find_package(orderwire 0.1).
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/orderwire-config-version.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/orderwire-config.cmake
              ${PROJECT_BINARY_DIR}/orderwire-config-version.cmake
        DESTINATION ${ORDERWIRE_CMAKE_DIR}
        COMPONENT orderwire_development)

# pkg-config for the codec alone. The library is static, so its
# dependencies go in Requires (not Requires.private): `pkg-config --libs`
# must name everything the link needs.
# Relocatable: the prefix is ${pcfiledir} and as many ".." as the folders of
# <libdir>/pkgconfig (the prefix given to cmake --install is not known
# here).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "orderwire-codec.pc needs a relative CMAKE_INSTALL_LIBDIR"
                      " (got ${CMAKE_INSTALL_LIBDIR})")
endif()
set(ORDERWIRE_PC_TO_PREFIX "..")
string(REPLACE "/" ";" libdir_folders "${CMAKE_INSTALL_LIBDIR}")
foreach(folder IN LISTS libdir_folders)
  string(APPEND ORDERWIRE_PC_TO_PREFIX "/..")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/orderwire-codec.pc.in
               ${PROJECT_BINARY_DIR}/orderwire-codec.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/orderwire-codec.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT orderwire_development)
