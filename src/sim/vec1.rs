//! `Vec1<T>`: a vector that holds its first element inline, so the common
//! case of per-file state with a single range (a small file's one dirty run,
//! its one extent) allocates nothing. Used for page-cache range sets and
//! extent lists, of which a small-file run has hundreds of thousands.

#[derive(Clone, Debug)]
pub struct Vec1<T: Copy> {
    /// The only element while `heap` is empty.
    one: Option<T>,
    /// All elements once there have been two at a time.
    heap: Vec<T>,
}

impl<T: Copy> Default for Vec1<T> {
    fn default() -> Self {
        Vec1 {
            one: None,
            heap: Vec::new(),
        }
    }
}

impl<T: Copy> Vec1<T> {
    pub fn as_slice(&self) -> &[T] {
        if self.heap.is_empty() {
            self.one.as_slice()
        } else {
            &self.heap
        }
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        if self.heap.is_empty() {
            self.one.as_mut_slice()
        } else {
            &mut self.heap
        }
    }
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn insert(&mut self, i: usize, x: T) {
        match (self.heap.is_empty(), self.one) {
            (true, None) => {
                assert!(i == 0, "insert index {i} out of bounds");
                self.one = Some(x);
            }
            (true, Some(y)) => {
                self.heap.reserve(4);
                self.heap.push(y);
                self.heap.insert(i, x);
                self.one = None;
            }
            (false, _) => self.heap.insert(i, x),
        }
    }
    pub fn push(&mut self, x: T) {
        self.insert(self.len(), x);
    }
    pub fn remove(&mut self, i: usize) -> T {
        if self.heap.is_empty() {
            assert!(i == 0, "remove index {i} out of bounds");
            self.one.take().expect("remove from an empty Vec1")
        } else {
            self.heap.remove(i)
        }
    }
    /// Replace `lo..hi` with `x`.
    pub fn replace_range(&mut self, lo: usize, hi: usize, x: T) {
        if self.heap.is_empty() {
            match hi - lo {
                0 => self.insert(lo, x),
                _ => self.one = Some(x),
            }
        } else {
            self.heap.splice(lo..hi, std::iter::once(x));
        }
    }
    pub fn last_mut(&mut self) -> Option<&mut T> {
        self.as_mut_slice().last_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::Vec1;

    #[test]
    fn behaves_like_a_vec() {
        let mut a: Vec1<u32> = Vec1::default();
        let mut b: Vec<u32> = Vec::new();
        // a fixed script of operations, checked against Vec after each
        let ops: &[(u8, usize, u32)] = &[
            (0, 0, 5),
            (0, 0, 3),
            (0, 2, 9),
            (2, 0, 4),
            (1, 1, 0),
            (1, 0, 0),
            (2, 1, 7),
            (3, 0, 6),
            (1, 0, 0),
            (1, 0, 0),
            (0, 0, 1),
            (2, 0, 2),
        ];
        for &(op, i, x) in ops {
            match op {
                0 => {
                    a.insert(i.min(a.len()), x);
                    b.insert(i.min(b.len()), x);
                }
                1 => {
                    assert_eq!(a.remove(i), b.remove(i));
                }
                2 => {
                    // replace [i, i+1) (or insert at the end)
                    let hi = (i + 1).min(b.len());
                    a.replace_range(i.min(a.len()), hi, x);
                    b.splice(i.min(b.len())..hi, std::iter::once(x));
                }
                _ => {
                    a.push(x);
                    b.push(x);
                }
            }
            assert_eq!(a.as_slice(), b.as_slice(), "after {op} {i} {x}");
        }
    }
}
