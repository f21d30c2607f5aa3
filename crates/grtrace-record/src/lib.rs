//! The grtrace recorder: drains per-CPU relay buffers through mmap into stream files
