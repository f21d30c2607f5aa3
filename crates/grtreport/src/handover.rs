//! A bounded queue of batches between two threads that wakes a waiting side only after
//! several batches, not after each.
//!
//! A report runs its stages on threads of different speeds (merging, joining, classifying;
//! see [`crate::engine`]). Through a plain bounded channel the faster side waits after every
//! batch and the slower one wakes it for the next: a futex wake and two context switches
//! per batch, thousands per second, on a machine whose two CPUs are also busy. Here the
//! producer, once it found the queue full, sleeps until the consumer has drained it to
//! `low`; the consumer, once it found the queue empty, sleeps until `high` batches are in
//! (or the producer is done). Each side then runs several batches in a row. Order and bound
//! are a channel's: batches come out in the order they went in, at most `cap` wait.
//!
//! Used buffers go back to the producer through the same lock ([`Consumer::give_back`],
//! [`Producer::spare`]), so a steady run allocates nothing. Like a channel's ends, dropping
//! one (also when its thread unwinds) tells the other side.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

struct State<T> {
    queue: VecDeque<T>,
    spare: Vec<T>,
    /// The producer is done (no more batches) or the consumer is gone (none will be taken).
    sent_all: bool,
    gone: bool,
    producer_waits: bool,
    consumer_waits: bool,
}

/// The queue both ends share (see the module documentation).
struct HandOver<T> {
    state: Mutex<State<T>>,
    /// The producer waits on this (queue full), the consumer on the other (queue empty).
    room: Condvar,
    work: Condvar,
    cap: usize,
    low: usize,
    high: usize,
}

/// The sending end of a [`hand_over`] queue.
pub struct Producer<T>(Arc<HandOver<T>>);

/// The receiving end of a [`hand_over`] queue.
pub struct Consumer<T>(Arc<HandOver<T>>);

/// A queue of at most `cap` batches; a producer that found it full sleeps until `low` wait
/// (`low < cap`); a consumer that found it empty sleeps until `high` wait
/// (`1 <= high <= cap`) or the producer is done.
pub fn hand_over<T>(cap: usize, low: usize, high: usize) -> (Producer<T>, Consumer<T>) {
    let q = Arc::new(HandOver::new(cap, low, high));
    (Producer(q.clone()), Consumer(q))
}

impl<T> Producer<T> {
    /// Queues `batch`, waiting while the queue is full. Gives it back if the consumer is
    /// gone.
    pub fn send(&self, batch: T) -> Result<(), T> {
        self.0.send(batch)
    }

    /// A buffer the consumer gave back, if there is one.
    pub fn spare(&self) -> Option<T> {
        self.0.lock().spare.pop()
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.0.close_sender();
    }
}

impl<T> Consumer<T> {
    /// The next batch, waiting while there is none; None once the producer is gone and
    /// every batch was taken.
    pub fn recv(&self) -> Option<T> {
        self.0.recv()
    }

    /// Returns a used buffer for the producer to fill again (at most `cap + 2` are kept).
    pub fn give_back(&self, batch: T) {
        let mut s = self.0.lock();
        if s.spare.len() < self.0.cap + 2 {
            s.spare.push(batch);
        }
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        self.0.close_receiver();
    }
}

impl<T> HandOver<T> {
    fn new(cap: usize, low: usize, high: usize) -> Self {
        assert!(
            low < cap && (1..=cap).contains(&high),
            "cap {cap} low {low} high {high}"
        );
        HandOver {
            state: Mutex::new(State {
                queue: VecDeque::with_capacity(cap),
                spare: Vec::new(),
                sent_all: false,
                gone: false,
                producer_waits: false,
                consumer_waits: false,
            }),
            room: Condvar::new(),
            work: Condvar::new(),
            cap,
            low,
            high,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic on the other side leaves the state consistent (every change is made
        // under the lock in one step); its thread's join reports the panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn send(&self, batch: T) -> Result<(), T> {
        let mut s = self.lock();
        loop {
            if s.gone {
                return Err(batch);
            }
            if s.queue.len() < self.cap {
                break;
            }
            s.producer_waits = true;
            s = self.room.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.queue.push_back(batch);
        if s.consumer_waits && s.queue.len() >= self.high {
            s.consumer_waits = false;
            self.work.notify_one();
        }
        Ok(())
    }

    fn recv(&self) -> Option<T> {
        let mut s = self.lock();
        loop {
            if let Some(b) = s.queue.pop_front() {
                if s.producer_waits && s.queue.len() <= self.low {
                    s.producer_waits = false;
                    self.room.notify_one();
                }
                return Some(b);
            }
            if s.sent_all {
                return None;
            }
            s.consumer_waits = true;
            s = self.work.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The producer sends no more: the consumer takes what is queued, then gets None.
    fn close_sender(&self) {
        let mut s = self.lock();
        s.sent_all = true;
        s.consumer_waits = false;
        self.work.notify_one();
    }

    /// The consumer takes no more: the producer's next (or waiting) send fails.
    fn close_receiver(&self) {
        let mut s = self.lock();
        s.gone = true;
        s.producer_waits = false;
        self.room.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the speeds and thresholds: every batch arrives once, in order, never more
    /// than `cap` waiting, and both ends finish (no side waits forever).
    #[test]
    fn batches_arrive_in_order_and_bounded() {
        for (cap, low, high) in [(1, 0, 1), (4, 1, 1), (6, 1, 1), (4, 3, 3), (8, 7, 4)] {
            for slow_consumer in [false, true] {
                let (tx, rx) = hand_over(cap, low, high);
                let n = 2000u32;
                let got = std::thread::scope(|s| {
                    s.spawn(move || {
                        for i in 0..n {
                            if !slow_consumer && i % 64 == 0 {
                                std::thread::yield_now();
                            }
                            tx.send(i).unwrap();
                            assert!(tx.0.lock().queue.len() <= cap);
                        }
                    });
                    let mut got = Vec::new();
                    while let Some(i) = rx.recv() {
                        if slow_consumer && i % 64 == 0 {
                            std::thread::yield_now();
                        }
                        got.push(i);
                    }
                    got
                });
                assert_eq!(got, (0..n).collect::<Vec<_>>(), "{cap} {low} {high}");
            }
        }
    }

    /// A consumer that stops (an output error) makes a waiting or later send fail, with
    /// the batch given back; a producer that stops leaves the queued batches to be taken.
    #[test]
    fn either_side_stopping_ends_the_other() {
        let (tx, rx) = hand_over(2, 1, 1);
        let (sent, tx) = std::thread::scope(|s| {
            let producer = s.spawn(move || {
                let mut sent = 0;
                for i in 0..100 {
                    match tx.send(i) {
                        Ok(()) => sent += 1,
                        Err(b) => {
                            assert_eq!(b, i);
                            break;
                        }
                    }
                }
                (sent, tx)
            });
            assert_eq!(rx.recv(), Some(0));
            drop(rx);
            producer.join().unwrap()
        });
        assert!((1..=4).contains(&sent), "{sent}");
        assert_eq!(tx.send(7), Err(7));

        let (tx, rx) = hand_over(4, 1, 3);
        tx.send(1).unwrap();
        rx.give_back(5);
        assert_eq!((tx.spare(), tx.spare()), (Some(5), None));
        // A producer that panics is gone as well.
        let r = std::thread::scope(|s| {
            s.spawn(move || {
                let _tx = tx;
                panic!("producer fails");
            })
            .join()
        });
        assert!(r.is_err());
        // Fewer than `high` queued: the consumer takes them without waiting, then ends.
        assert_eq!((rx.recv(), rx.recv()), (Some(1), None));
    }
}
