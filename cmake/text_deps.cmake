# Dependencies of the text module (src/text): Oniguruma for the tokenizer.json regexes
# (Debian: libonig-dev, pkg-config name "oniguruma").
find_package(PkgConfig REQUIRED)
pkg_check_modules(ONIGURUMA REQUIRED IMPORTED_TARGET oniguruma)
