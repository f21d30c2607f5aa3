# shellcheck shell=bash
# The kernel patch series, defined once for build.sh and ci.sh (sourced, not run):
# every patches/NNNN-*.patch in order, but 0000 (the cover letter).
# series_patches PATCH_DIR: prints the series' files, one a line
series_patches() {
    local p
    for p in "$1"/[0-9][0-9][0-9][0-9]-*.patch; do
        [ -f "$p" ] || continue
        case ${p##*/} in 0000-*) ;; *) echo "$p" ;; esac
    done
}
