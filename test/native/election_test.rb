# frozen_string_literal: true

require "test_helper"

# LeaseMachines::Election and Table#acquire_leadership, one rule per test.
class ElectionTest < Minitest::Test
  MEMBERS = [1, 2, 3].freeze

  def vote(voter, candidate, term = 7, granted: true) = LeaseMachines::ElectionVote.new(voter:, candidate:, term:, granted:)

  def certify(votes, term = 7) = LeaseMachines::Election.certify_votes(votes:, members: MEMBERS, term:)

  def elected(leader, term) = certify(MEMBERS.first(2).map { vote(_1, leader, term) }, term)

  def test_selection_prefers_priority_then_the_smaller_id
    candidates = [[3, 5], [2, 9], [1, 9]].map { |id, priority| LeaseMachines::Candidate.new(id:, priority:) }
    assert_equal LeaseMachines::Candidate.new(id: 1, priority: 9), LeaseMachines::Election.select_candidate(candidates)
    assert_nil LeaseMachines::Election.select_candidate([])
  end

  def test_quorum_is_a_strict_majority
    assert_equal [1, 1, 2, 2, 3, 3, 4], (0..6).map { LeaseMachines::Election.quorum_size(_1) }
  end

  def test_a_majority_of_members_certifies_its_candidate
    certificate = certify([vote(1, 2), vote(2, 2), vote(3, 1)])
    assert_predicate certificate, :valid?
    assert_equal [:certified, 2, 7, 3, 2, [1, 2]], certificate.deconstruct[1..6]
  end

  def test_votes_for_another_term_refused_or_from_non_members_do_not_count
    certificate = certify([vote(1, 2), vote(2, 2, 6), vote(3, 2, granted: false), vote(9, 2)])
    refute_predicate certificate, :valid?
    assert_equal [:no_quorum, "no quorum"], [certificate.status, certificate.message]
  end

  def test_duplicate_votes_count_once
    refute_predicate certify([vote(1, 2), vote(1, 2)]), :valid?
  end

  def test_an_equivocators_votes_do_not_count_and_are_reported
    certificate = certify([vote(1, 2), vote(1, 3), vote(2, 2)])
    refute_predicate certificate, :valid?
    equivocation = certificate.equivocations.first
    assert_equal [1, vote(1, 2), vote(1, 3)], [equivocation.voter, equivocation.first, equivocation.second]
  end

  def test_the_order_of_votes_does_not_matter
    votes = [vote(1, 2), vote(1, 3), vote(2, 2), vote(3, 2)]
    assert_equal certify(votes), certify(votes.reverse)
  end

  def test_leadership_goes_only_to_the_elected_owner_with_a_newer_term
    table = LeaseMachines::Table.new
    lease = table.acquire_leadership(resource: "leader", certificate: elected(2, 5), owner: 2, now: 0.0, ttl: 5.0).lease
    assert_equal [2, 1, 5], [lease.owner, lease.token, lease.term]
    assert_equal [:acquired, 5], table.events.last.then { [_1.kind, _1.term] }
    table.release(resource: "leader", owner: 2, token: lease.token, now: 1.0)
    decide = ->(certificate, owner) { table.acquire_leadership(resource: "leader", certificate:, owner:, now: 2.0, ttl: 5.0) }
    assert_equal :no_quorum, decide.(certify([vote(1, 3)], 9), 3).reason
    assert_equal :not_leader, decide.(elected(3, 9), 1).reason
    assert_equal :stale_term, decide.(elected(3, 5), 3).reason
    assert_equal [3, 2, 9], decide.(elected(3, 9), 3).lease.then { [_1.owner, _1.token, _1.term] }
    assert_equal 9, table.term("leader")
  end

  def test_bad_input_raises
    ill_typed!
    assert_raises(TypeError) { LeaseMachines::Election.certify_votes(votes: [[1, 2, 7, true]], members: MEMBERS, term: 7) }
    assert_raises(TypeError) { LeaseMachines::Election.certify_votes(votes: [vote(1, 2, granted: 1)], members: MEMBERS, term: 7) }
    assert_raises(RangeError) { LeaseMachines::Election.certify_votes(votes: [], members: [-1], term: 7) }
    assert_raises(TypeError) { LeaseMachines::Election.select_candidate([1]) }
    assert_raises(RangeError) { LeaseMachines::Election.quorum_size(-1) }
  end
end
