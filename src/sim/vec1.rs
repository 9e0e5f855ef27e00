//! `Vec1<T>`: a vector that holds its first element inline, so the common
//! case of per-file state with a single range (a small file's one dirty run,
//! its one extent) allocates nothing. Used for page-cache range sets and
//! extent lists, of which a small-file run has hundreds of thousands; as an
//! enum it is no bigger than a `Vec` (for elements of up to 16 bytes).

#[derive(Clone, Debug, Default)]
pub enum Vec1<T: Copy> {
    #[default]
    Empty,
    One(T),
    /// Once there have been two elements at a time.
    Heap(Vec<T>),
}

impl<T: Copy> Vec1<T> {
    pub fn as_slice(&self) -> &[T] {
        match self {
            Vec1::Empty => &[],
            Vec1::One(x) => std::slice::from_ref(x),
            Vec1::Heap(v) => v,
        }
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            Vec1::Empty => &mut [],
            Vec1::One(x) => std::slice::from_mut(x),
            Vec1::Heap(v) => v,
        }
    }
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn insert(&mut self, i: usize, x: T) {
        match self {
            Vec1::Empty => {
                assert!(i == 0, "insert index {i} out of bounds");
                *self = Vec1::One(x);
            }
            &mut Vec1::One(y) => {
                let mut v = Vec::with_capacity(4);
                v.push(y);
                v.insert(i, x);
                *self = Vec1::Heap(v);
            }
            Vec1::Heap(v) => v.insert(i, x),
        }
    }
    pub fn push(&mut self, x: T) {
        self.insert(self.len(), x);
    }
    pub fn remove(&mut self, i: usize) -> T {
        match self {
            Vec1::Empty => panic!("remove from an empty Vec1"),
            &mut Vec1::One(y) => {
                assert!(i == 0, "remove index {i} out of bounds");
                *self = Vec1::Empty;
                y
            }
            Vec1::Heap(v) => v.remove(i),
        }
    }
    /// Replace `lo..hi` with `x`.
    pub fn replace_range(&mut self, lo: usize, hi: usize, x: T) {
        match self {
            Vec1::Heap(v) => match hi - lo {
                0 => v.insert(lo, x),
                1 => v[lo] = x,
                _ => {
                    v[lo] = x;
                    v.drain(lo + 1..hi);
                }
            },
            _ if hi == lo => self.insert(lo, x),
            _ => *self = Vec1::One(x),
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
