//! Ordering by a key, for the items the exports keep in heaps (slices waiting for the
//! watermark, slice ends, jobs carried to the page): their order is one key, not their
//! fields, so equality is the key's too.

/// Implements `Eq` and `Ord` (and the partial traits) for `$ty` as the order of the key
/// `$key` computes from `&$ty`.
macro_rules! order_by_key {
    ($ty:ty, $key:expr) => {
        impl PartialEq for $ty {
            fn eq(&self, o: &Self) -> bool {
                let key = $key;
                key(self) == key(o)
            }
        }
        impl Eq for $ty {}
        impl PartialOrd for $ty {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for $ty {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                let key = $key;
                key(self).cmp(&key(o))
            }
        }
    };
}

pub(crate) use order_by_key;
