# Dependencies of the text module (src/text):
# - Oniguruma runs the tokenizer.json regexes (Debian: libonig-dev, pkg-config "oniguruma");
# - ICU's character properties bridge Oniguruma's older Unicode tables (Debian: libicu-dev,
#   pkg-config "icu-uc"); see src/text/unicode_bridge.h.
find_package(PkgConfig REQUIRED)
pkg_check_modules(ONIGURUMA REQUIRED IMPORTED_TARGET oniguruma)
pkg_check_modules(ICU_UC REQUIRED IMPORTED_TARGET icu-uc)
