# frozen_string_literal: true

require "test_helper"

# Threads share one Authority and one Fence: no crash, every granted token unique and rising, and the fence never
# accepts a token older than one it accepted before. Ractors get their own authorities and share frozen values.
class ConcurrencyTest < Minitest::Test
  THREADS = 8

  def test_eight_threads_hammering_one_authority_get_unique_rising_tokens
    authority = LeaseMachines::Authority.new
    clock = Mutex.new
    now = 0.0
    per_thread = iterations(2_000)
    grants = Array.new(THREADS) do |owner|
      Thread.new do
        per_thread.times.filter_map do
          at = clock.synchronize { now += 1.0 }
          decision = authority.acquire(owner: owner, now: at, ttl: 0.5)
          authority.release(owner: owner, token: decision.lease.token, now: at) if decision.granted? && owner.even?
          decision.lease&.token
        end
      end
    end.flat_map(&:value)

    assert_operator grants.size, :>, per_thread
    assert_equal grants.size, grants.uniq.size, "no token granted twice"
    assert_equal grants.sort, (1..grants.size).to_a, "tokens 1..n with no gaps, each once"
    assert_equal grants.size, authority.last_issued
  end

  def test_eight_threads_hammering_one_fence_never_move_it_backwards
    fence = LeaseMachines::Fence.new
    per_thread = iterations(5_000)
    accepted = Array.new(THREADS) do |seed|
      Thread.new do
        random = Random.new(seed)
        per_thread.times.filter_map do
          token = random.rand(1..1_000)
          token if fence.accept(token)
        end
      end
    end.map(&:value)

    accepted.each { |tokens| assert_equal tokens.sort, tokens, "each thread saw a rising mark" }
    assert_equal accepted.flatten.max, fence.highest
  end

  def test_ractors_run_their_own_authorities_and_share_frozen_values
    ractors!
    lease = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0)
    ractors = 4.times.map do |owner|
      Ractor.new(owner, lease) do |id, shared|
        authority = LeaseMachines::Authority.new
        tokens = 3.times.map { |i| authority.acquire(owner: id, now: i * 10.0, ttl: 1.0).lease.token }
        [tokens, shared.token]
      end
    end
    results = ractors.map { |ractor| ractor.respond_to?(:value) ? ractor.value : ractor.take }
    assert_equal [[[1, 2, 3], 1]] * 4, results
  end

  def test_ractors_run_their_own_tables_and_share_table_values
    ractors!
    table = LeaseMachines::Table.new
    lease = table.acquire(resource: "jobs", owner: 1, now: 0.0, ttl: 5.0).lease
    events = table.events
    certificate = LeaseMachines::Election.certify_votes(
      votes: [LeaseMachines::ElectionVote.new(voter: 1, candidate: 1, term: 1, granted: true)], members: [1], term: 1
    )
    [lease, events, table.metrics(now: 1.0), LeaseMachines.audit(events), certificate].each do |value|
      assert Ractor.shareable?(value), "#{value.class} is shareable"
    end
    ractors = 2.times.map do |owner|
      Ractor.new(owner, lease) do |id, shared|
        own = LeaseMachines::Table.new
        tokens = 3.times.map { |i| own.acquire(resource: shared.resource, owner: id, now: i * 10.0, ttl: 1.0).lease.token }
        [tokens, shared.token]
      end
    end
    results = ractors.map { |ractor| ractor.respond_to?(:value) ? ractor.value : ractor.take }
    assert_equal [[[1, 2, 3], 1]] * 2, results
  end
end
