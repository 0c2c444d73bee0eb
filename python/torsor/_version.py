"""The one version number of Torsor. The top CMakeLists.txt (torsorc
--version) and runtime/CMakeLists.txt (torsor-run --version, the CMake
package and pkg-config files) read it from here, and pyproject.toml takes
the package version from it; change it only here."""
__version__ = "0.2.0"
