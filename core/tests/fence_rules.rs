//! The fence's rules, one test each.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use lease_machines::Fence;

mod support;
use support::token;

#[test]
fn a_new_fence_accepts_any_first_token() {
    let mut fence = Fence::default();
    assert_eq!(fence.highest(), None);
    assert!(fence.accept(token(5)));
    assert_eq!(fence.highest(), Some(token(5)));
}

#[test]
fn a_newer_token_is_accepted_and_raises_the_mark() {
    let mut fence = Fence::new(Some(token(1)));
    assert!(fence.accept(token(2)));
    assert_eq!(fence.highest(), Some(token(2)));
}

#[test]
fn an_older_token_is_refused_and_changes_nothing() {
    let mut fence = Fence::new(Some(token(2)));
    assert!(!fence.accept(token(1)));
    assert_eq!(fence.highest(), Some(token(2)));
}

#[test]
fn an_equal_token_stays_valid_for_repeated_operations() {
    let mut fence = Fence::new(Some(token(7)));
    assert!(fence.accept(token(7)));
    assert!(fence.accept(token(7)));
    assert_eq!(fence.highest(), Some(token(7)));
}

#[test]
fn a_restarted_fence_keeps_its_persisted_mark() {
    let mut before = Fence::new(None);
    assert!(before.accept(token(3)));
    let mut after = Fence::new(before.highest());
    assert!(!after.accept(token(2)));
    assert!(after.accept(token(3)));
}
