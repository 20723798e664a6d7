//! Token epochs (`TokenEpoch`, `LeaseRow::in_epoch`, `LeaseRow::decide_in`): their rules, one test each, then a
//! property test against a small model of a store whose database loses rows: every loss is followed by the next
//! epoch, and across every loss no token is issued twice and no holder from before a loss passes the fence.
//!
//! `PROPTEST_CASES` (proptest's own, default 256) sets the sequences per property.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{
    Checkpoint, ClockPolicy, Decision, Fence, FencingToken, LeaseRow, OwnerId, Rejection, Request, TokenEpoch,
    WriteCheck, EPOCH_BITS, GENERATION_BITS,
};
use proptest::prelude::*;

mod support;
use support::{s, token, A, B};

const CLAMP: ClockPolicy = ClockPolicy::Clamp;

fn epoch(number: u64) -> TokenEpoch {
    TokenEpoch::new(number).expect("a test epoch")
}

fn granted(row: &LeaseRow, epoch: TokenEpoch, owner: OwnerId, now: Duration) -> (FencingToken, LeaseRow) {
    let answer = row.decide_in(epoch, Request::Acquire { owner, ttl: s(10) }, now, CLAMP).expect("room in the epoch");
    let Decision::Granted(lease) = answer.decision() else { panic!("not granted: {:?}", answer.decision()) };
    (lease.token(), answer.write().expect("a grant writes its row"))
}

#[test]
fn the_first_epoch_issues_from_one_as_a_store_without_epochs_does() {
    assert_eq!(TokenEpoch::FIRST.floor(), None);
    assert_eq!(LeaseRow::EMPTY.in_epoch(TokenEpoch::FIRST), LeaseRow::EMPTY);
    assert_eq!(granted(&LeaseRow::EMPTY, TokenEpoch::FIRST, A, s(0)).0, token(1));
}

#[test]
fn an_epoch_issues_above_its_floor_and_at_most_its_last_token() {
    let third = epoch(3);
    assert_eq!(third.floor(), Some(token(3 << EPOCH_BITS)));
    assert_eq!(third.last_token(), token((4 << EPOCH_BITS) - 1));
    assert!(!third.contains(token(3 << EPOCH_BITS)));
    assert!(third.contains(token((3 << EPOCH_BITS) + 1)));
    assert!(third.contains(third.last_token()));
    assert!(!third.contains(token(4 << EPOCH_BITS)));
    assert_eq!(TokenEpoch::of(third.last_token()), third);
}

#[test]
fn a_row_the_database_lost_is_granted_above_the_new_epochs_floor() {
    let (token_before, _) = granted(&LeaseRow::EMPTY, epoch(0), A, s(0));
    // The row is gone; the store noticed the loss and moved to epoch 1.
    let (token_after, row) = granted(&LeaseRow::EMPTY, epoch(1), B, s(1));
    assert_eq!(token_after, token((1 << EPOCH_BITS) + 1));
    assert!(token_after > token_before);
    assert!(row.revision() >= token_after.value(), "a row counts at least one change per token it issued");
}

#[test]
fn a_holder_from_before_a_loss_is_refused_as_stale_never_as_a_token_never_issued() {
    // A's token 5 wrote through the fence; then the row was lost, and nobody was granted since.
    let lost = LeaseRow::EMPTY.in_epoch(epoch(1));
    let fence = Fence::new(Some(token(5)));
    assert_eq!(lost.check_write(fence, token(5), s(1)), WriteCheck::Refused(Rejection::StaleToken));
    assert_eq!(lost.check_write(Fence::new(None), token(4), s(1)), WriteCheck::Refused(Rejection::StaleToken));
    // Without the epoch, the same row calls the token made up and the mark corrupt.
    assert_eq!(LeaseRow::EMPTY.check_write(fence, token(5), s(1)), WriteCheck::InconsistentMark);
    assert_eq!(LeaseRow::EMPTY.check_write(Fence::new(None), token(5), s(1)), WriteCheck::NeverIssued);
}

#[test]
fn a_holder_whose_row_survived_the_move_to_a_new_epoch_holds_on() {
    let (held, row) = granted(&LeaseRow::EMPTY, epoch(0), A, s(0));
    let raised = row.in_epoch(epoch(1));
    assert_eq!(raised.checkpoint().lease(), row.checkpoint().lease());
    assert_eq!(raised.checkpoint().observed(), row.checkpoint().observed());
    assert!(matches!(raised.check_write(Fence::new(Some(held)), held, s(1)), WriteCheck::Admitted(_)));
    let renewed = raised.decide_in(epoch(1), Request::Renew { owner: A, token: held, ttl: s(10) }, s(2), CLAMP);
    assert!(matches!(renewed.map(|answer| answer.decision()), Ok(Decision::Renewed(_))));
    // Its successor's token is the new epoch's.
    let (next, _) = granted(&raised, epoch(1), B, s(20));
    assert_eq!(next, token((1 << EPOCH_BITS) + 1));
}

#[test]
fn a_row_above_the_floor_is_decided_unchanged() {
    let (_, row) = granted(&LeaseRow::EMPTY, epoch(2), A, s(0));
    assert_eq!(row.in_epoch(epoch(2)), row);
    assert_eq!(row.in_epoch(epoch(1)), row);
}

#[test]
fn a_grant_past_the_epochs_last_token_is_not_decided_in_it() {
    let first = TokenEpoch::FIRST;
    let last = first.last_token();
    let full = Checkpoint::from_parts(Some(last), None, s(0)).expect("a checkpoint");
    let full = LeaseRow::from_parts(full, last.value()).expect("a row");
    let request = Request::Acquire { owner: B, ttl: s(10) };
    assert_eq!(full.decide_in(first, request, s(1), CLAMP), Err(epoch(1)), "the token after it opens epoch 1");
    assert!(TokenEpoch::is_floor(token(1 << EPOCH_BITS)));
    assert!(!TokenEpoch::is_floor(token((1 << EPOCH_BITS) + 1)));
    assert_eq!(TokenEpoch::opened_by(Some(token(1 << EPOCH_BITS))), Some(epoch(1)));
    assert_eq!(TokenEpoch::opened_by(Some(token(2))), None);
    assert_eq!(TokenEpoch::opened_by(None), None);
    let (next, _) = granted(&full, epoch(1), B, s(1));
    assert_eq!(next, token((1 << EPOCH_BITS) + 1));
    // A refusal issues nothing and is decided in any epoch.
    let (_, held) = granted(&LeaseRow::EMPTY, first, A, s(0));
    assert!(held.decide_in(first, request, s(1), CLAMP).is_ok());
}

#[test]
fn a_row_already_in_a_later_epoch_goes_on_issuing_its_own_tokens() {
    let (_, ahead) = granted(&LeaseRow::EMPTY, epoch(3), A, s(0));
    let (next, _) = granted(&ahead, epoch(1), B, s(20));
    assert_eq!(next, token((3 << EPOCH_BITS) + 2));
}

#[test]
fn a_new_history_takes_one_epoch_above_the_recorded_one_and_no_lower_than_its_generations_first() {
    assert_eq!(TokenEpoch::after(None, 0), Some(TokenEpoch::FIRST), "a database that never recorded one");
    assert_eq!(TokenEpoch::after(Some(epoch(4)), 0), Some(epoch(5)));
    assert_eq!(TokenEpoch::after(Some(epoch(4)), 1), Some(epoch(1 << GENERATION_BITS)));
    assert_eq!(TokenEpoch::after(Some(epoch((1 << GENERATION_BITS) + 3)), 1), Some(epoch((1 << GENERATION_BITS) + 4)));
    assert_eq!(TokenEpoch::after(Some(TokenEpoch::LAST), 0), None, "epochs never wrap");
    assert_eq!(TokenEpoch::first_of_generation(u64::MAX), None);
}

#[test]
fn epochs_end_at_the_last_token_and_never_wrap() {
    assert_eq!(TokenEpoch::LAST.last_token(), FencingToken::LAST);
    assert_eq!(TokenEpoch::LAST.next(), None);
    assert_eq!(TokenEpoch::new(TokenEpoch::LAST.number() + 1), None);
    assert_eq!(TokenEpoch::FIRST.next(), Some(epoch(1)));
}

// ---------------------------------------------------------------------------------------------------------------
// The model: a store whose database loses rows
// ---------------------------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Step {
    /// An owner asks for the lease, `after` seconds after the last step.
    Acquire { owner: u64, after: u64 },
    /// The current holder gives it back.
    Release,
    /// The holder writes through the fence.
    Write,
    /// The database loses rows: the row falls back to the one it was `back` commits ago (or to none), and the store,
    /// noticing the new history, moves to the next epoch.
    Lose { back: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1..4u64, 0..20u64).prop_map(|(owner, after)| Step::Acquire { owner, after }),
        1 => Just(Step::Release),
        3 => Just(Step::Write),
        1 => (0..6usize).prop_map(|back| Step::Lose { back }),
    ]
}

proptest! {
    #![proptest_config(support::model_config("proptest-regressions/token_epoch_rules.txt"))]

    /// Along a line of histories whose generations rise (a promotion's timeline above the one it followed), an epoch
    /// taken in a later generation is above every epoch an earlier one took, whatever its own copy of the record
    /// missed (a standby that never received the last move), as long as no generation moved through 2^10 histories.
    #[test]
    fn a_later_generation_takes_an_epoch_above_every_earlier_ones(moves in proptest::collection::vec((0..3u64, 0..4usize), 1..40)) {
        let mut generation = 0u64;
        let mut taken: Vec<(u64, TokenEpoch)> = Vec::new(); // every epoch taken, with its generation
        let mut recorded: Option<TokenEpoch> = None;
        for (rise, lag) in moves {
            generation += rise;
            // The record this history starts from: the latest, or one a few moves behind (lost in a failover).
            let known = taken.len().saturating_sub(lag);
            let base = if lag == 0 { recorded } else { taken.get(known.wrapping_sub(1)).map(|(_, e)| *e) };
            let next = TokenEpoch::after(base, generation).expect("epochs left");
            for (earlier, epoch) in &taken {
                if *earlier < generation {
                    prop_assert!(next > *epoch, "{next:?} in generation {generation} not above {epoch:?} of {earlier}");
                }
            }
            if base == recorded {
                prop_assert!(recorded.is_none_or(|recorded| next > recorded));
            }
            taken.push((generation, next));
            recorded = Some(next);
        }
    }

    /// Every token is issued once, in rising order, through every loss; every token a past holder carries is refused
    /// by the fence once a later grant was made or its row was lost; the rows raised are ones `from_parts` accepts.
    #[test]
    fn across_losses_every_token_is_issued_once_and_no_stale_holder_passes(steps in proptest::collection::vec(step(), 1..64)) {
        let mut epoch = TokenEpoch::FIRST;
        let mut row = LeaseRow::EMPTY;
        let mut committed = vec![LeaseRow::EMPTY];
        let mut now = s(0);
        let mut issued: Vec<FencingToken> = Vec::new();
        let mut holder: Option<(OwnerId, FencingToken)> = None;
        let mut fence = Fence::new(None);
        for step in steps {
            match step {
                Step::Acquire { owner, after } => {
                    now += s(after);
                    let request = Request::Acquire { owner: OwnerId::new(owner), ttl: s(10) };
                    let answer = loop {
                        match row.decide_in(epoch, request, now, CLAMP) {
                            Ok(answer) => break answer,
                            Err(opened) => epoch = opened,
                        }
                    };
                    if let Some(token) = answer.issued() {
                        prop_assert!(epoch.contains(token));
                        prop_assert!(issued.last().is_none_or(|last| token > *last), "token {token:?} after {issued:?}");
                        issued.push(token);
                        holder = Some((OwnerId::new(owner), token));
                    }
                    if let Some(write) = answer.write() {
                        row = write;
                        committed.push(row);
                    }
                }
                Step::Release => {
                    if let Some((owner, token)) = holder.take() {
                        let answer = row.in_epoch(epoch).decide(Request::Release { owner, token }, now, CLAMP);
                        if let Some(write) = answer.write() {
                            row = write;
                            committed.push(row);
                        }
                    }
                }
                Step::Write => {
                    let Some((_, token)) = holder else { continue };
                    let newest = issued.last().copied();
                    match row.in_epoch(epoch).check_write(fence, token, now) {
                        WriteCheck::Admitted(mark) => {
                            // Only the newest grant's holder is ever admitted.
                            prop_assert_eq!(Some(token), newest);
                            fence = mark;
                        }
                        WriteCheck::Refused(_) => {}
                        other => prop_assert!(false, "a token the store issued checked as {other:?}"),
                    }
                }
                Step::Lose { back } => {
                    let kept = committed.len().saturating_sub(back + 1);
                    committed.truncate(kept.max(1));
                    row = *committed.last().expect("the empty row stays");
                    epoch = epoch.next().expect("epochs left");
                }
            }
            let raised = row.in_epoch(epoch);
            prop_assert!(LeaseRow::from_parts(raised.checkpoint(), raised.revision()).is_some());
        }
    }
}
