//! grtsim: a kernel-free producer of the exact grtrace debugfs tree and relay buffers
