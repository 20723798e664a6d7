# frozen_string_literal: true

require "support/store_rules"

# The store's event log, on SQLite (StoreEventLogTest) and PostgreSQL (StoreEventLogPostgreSQLTest): one event per
# request in the request's own transaction (worker 7's night, told by the log), the audit of a store's history,
# retention in constant work, keyset pages of events and leases, and revocation.
module StoreEventLogRules
  include LeaseMachines::TestSupport::StoreRules

  # Worker 7's report, the README's main story.
  R = "nightly-report"

  # Worker 7 takes the lease, writes, pauses past its expiry; worker 9 takes over and writes; worker 7 wakes, and
  # its write with the old token is refused.
  def worker_sevens_night
    store.acquire(resource: R, owner: 7, ttl: 10.0, now: 0.0)
    store.fenced(resource: R, token: 1, now: 1.0) { nil }
    store.renew(resource: R, owner: 7, token: 1, ttl: 10.0, now: 5.0)
    store.acquire(resource: R, owner: 9, ttl: 10.0, now: 8.0) # refused: 7's lease is live until 15
    store.acquire(resource: R, owner: 9, ttl: 10.0, now: 16.0)
    store.fenced(resource: R, token: 2, now: 17.0) { nil }
    assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 1, now: 18.0) { flunk "never runs" } }
    store.release(resource: R, owner: 9, token: 2, now: 19.0)
  end

  def test_each_request_logs_one_event_in_its_transaction_and_the_log_tells_worker_sevens_night
    worker_sevens_night
    events = store.events(resource: R)
    assert_equal %i[acquired write_accepted renewed refused acquired write_accepted write_refused released],
                 events.map(&:kind)
    assert_equal [0.0, 1.0, 5.0, 8.0, 16.0, 17.0, 18.0, 19.0], events.map(&:at)
    assert_equal events.map(&:id).sort, events.map(&:id), "ids rise"
    takeover = events[4]
    assert takeover.takeover?
    assert_equal [9, 2, 26.0, 3], [takeover.owner, takeover.token, takeover.expires_at, takeover.revision]
    assert_equal LeaseMachines::Lease.new(owner: 7, token: 1, expires_at: 15.0), takeover.replaced
    refused = events[3]
    assert_equal [9, nil, :occupied], [refused.owner, refused.token, refused.reason]
    stale = events[6]
    assert_equal [1, :stale_token, 2], [stale.token, stale.reason, stale.highest]
    assert_equal [2, 2], [events[5].token, events[5].highest]
    assert_equal [9, 2, nil], [events[7].owner, events[7].token, events[7].reason]
    assert events.all?(&:frozen?)
  end

  def test_a_store_history_passes_the_audit_and_a_tampered_one_does_not
    worker_sevens_night
    store.acquire(resource: "other", owner: 3, ttl: 5.0, now: 2.0) # an earlier instant on another lease
    report = store.audit
    assert report.valid?, report.findings.inspect
    assert_equal 5, report.checked_events, "the accepted changes: refusals and writes are not changes"
    renewed = store.events(resource: R).find { _1.kind == :renewed }
    tamper("UPDATE lease_machines_events SET expires_at = 1.0 WHERE id = #{renewed.id}")
    report = store.audit
    refute report.valid?
    assert_equal [[:renewal_shortened, R, renewed.id]], report.findings.map { [_1.code, _1.resource, _1.event_index] }
  end

  def test_a_failed_request_logs_nothing
    store.acquire(resource: R, owner: 7, ttl: 10.0, now: 0.0)
    assert_raises(RuntimeError) { store.fenced(resource: R, token: 1, now: 1.0) { raise "the write failed" } }
    assert_equal %i[acquired], store.events(resource: R).map(&:kind), "rolled back with the write"
  end

  def test_retention_keeps_the_newest_events_of_each_lease_in_constant_work
    small = open_store(keep_events: 3)
    8.times { |n| small.renew(resource: R, owner: 7, token: 1, ttl: 10.0, now: n.to_f) }
    small.acquire(resource: "b", owner: 2, ttl: 10.0, now: 9.0)
    assert_equal [5.0, 6.0, 7.0], small.events(resource: R).map(&:at), "the newest 3 of the lease"
    assert_equal [9.0], small.events(resource: "b").map(&:at)
    aged = open_store(events_max_age: 10.0)
    aged.acquire(resource: "c", owner: 1, ttl: 5.0, now: 100.0)
    listed = -> { aged.events.map { [_1.resource, _1.at] } }
    assert_equal [[R, 7.0], ["b", 9.0], ["c", 100.0]], listed.call, "each event prunes the two oldest, if too old"
    aged.renew(resource: "c", owner: 1, token: 1, ttl: 5.0, now: 101.0)
    assert_equal [["c", 100.0], ["c", 101.0]], listed.call
  end

  def test_events_page_by_key_and_check_their_arguments
    worker_sevens_night
    all = store.events(limit: 3)
    assert_equal 3, all.size
    rest = store.events(after: all.last.id)
    assert_equal store.events.map(&:id), (all + rest).map(&:id)
    assert_raises(ArgumentError) { store.events(limit: 0) }
    assert_raises(ArgumentError) { store.events(limit: 1001) }
    assert_equal({ acquired: 2, renewed: 1, released: 1, refused: 1, write_accepted: 2, write_refused: 1 },
                 store.event_counts.select { |_, count| count.positive? })
  end

  def test_resources_page_by_key_with_a_prefix_and_count
    names = %w[a/1 a/2 a/3 b/1 ab]
    names.each_with_index { |name, n| store.acquire(resource: name, owner: n + 1, ttl: 10.0, now: 1.0) }
    store.acquire(resource: "a/2", owner: 50, ttl: 10.0, now: 1.0, limit: 2) # slot 1 of a/2
    seen = []
    after = nil
    loop do
      page = store.resources(after: after, limit: 2)
      break if page.empty?

      seen.concat(page.map(&:key))
      after = page.last.key
    end
    assert_equal [["a/1", 0], ["a/2", 0], ["a/2", 1], ["a/3", 0], ["ab", 0], ["b/1", 0]], seen
    assert_equal [["a/1", 0], ["a/2", 0], ["a/2", 1], ["a/3", 0]], store.resources(prefix: "a/").map(&:key)
    assert_equal 6, store.resource_count
    assert_equal 4, store.resource_count(prefix: "a/")
    assert_equal 5, store.resource_count(prefix: "a")
    assert_equal 0, store.resource_count(prefix: "a/4")
    store.acquire(resource: "z\u{10FFFF}", owner: 1, ttl: 1.0, now: 1.0)
    store.acquire(resource: "z\u{10FFFF}\u{10FFFF}x", owner: 1, ttl: 1.0, now: 1.0)
    assert_equal 2, store.resource_count(prefix: "z\u{10FFFF}"), "a prefix whose last character has no successor"
    assert_equal 1, store.resource_count(prefix: "z\u{10FFFF}\u{10FFFF}")
    held = store.resources(prefix: "b/").first
    assert_equal [4, 1, 11.0, nil], [held.owner, held.token, held.expires_at, held.highest]
    assert_equal held.lease, held.lease_at(10.9)
    assert_nil held.lease_at(11.0), "expired at 11: the core's rule"
    assert_raises(ArgumentError) { store.resources(limit: 0) }
  end

  # A token no history can have issued (above the databases' integers) is refused as any stale token is, and its
  # refusal logged without it, rather than failing to be stored.
  def test_a_refusal_of_a_token_above_the_databases_integers_is_logged_without_it
    store.acquire(resource: R, owner: 7, ttl: 10.0, now: 0.0)
    assert_equal :stale_token, store.release(resource: R, owner: 7, token: 2**63, now: 1.0).reason
    assert_equal :stale_token, store.revoke(resource: R, token: 2**64 - 1, now: 2.0).reason
    error = assert_raises(ArgumentError) { store.fenced(resource: R, token: 2**64 - 1, now: 3.0) { flunk } }
    assert_match(/never issued/, error.message)
    refused = store.events(resource: R).drop(1)
    assert_equal [[:refused, :stale_token, nil], [:refused, :stale_token, nil]], refused.map { [_1.kind, _1.reason, _1.token] }
  end

  def test_latest_events_are_the_newest_oldest_first
    6.times { |n| store.renew(resource: R, owner: 7, token: 1, ttl: 10.0, now: n.to_f) } # refused: never granted
    store.acquire(resource: "other", owner: 1, ttl: 10.0, now: 7.0)
    assert_equal [4.0, 5.0], store.latest_events(resource: R, limit: 2).map(&:at)
    assert_equal [5.0, 7.0], store.latest_events(limit: 2).map(&:at)
    assert_raises(ArgumentError) { store.latest_events(limit: 0) }
  end

  def test_arguments_of_another_class_are_type_errors_a_basic_object_too
    ill_typed!
    [-> { store.events(resource: 3) }, -> { store.events(after: "3") }, -> { store.resources(after: "a/1") },
     -> { store.events(resource: BasicObject.new) }, -> { store.events(after: BasicObject.new) },
     -> { store.latest_events(resource: BasicObject.new) }, -> { store.resources(after: BasicObject.new) },
     -> { store.resources(prefix: BasicObject.new) }, -> { store.resource_count(prefix: BasicObject.new) }]
      .each { assert_raises(TypeError, &_1) }
  end

  def test_revoke_ends_the_live_lease_whoever_holds_it_and_fences_its_token
    store.acquire(resource: R, owner: 7, ttl: 10.0, now: 0.0)
    assert_equal :released, store.revoke(resource: R, now: 1.0).status
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 1, now: 2.0) { flunk } }
    assert_equal :not_held, error.reason
    assert_equal 2, store.acquire(resource: R, owner: 9, ttl: 10.0, now: 3.0).lease.token
    stale = store.revoke(resource: R, token: 1, now: 4.0)
    assert_equal [:rejected, :stale_token], [stale.status, stale.reason]
    assert_equal %i[acquired revoked write_refused acquired refused], store.events(resource: R).map(&:kind)
    assert_equal [7, 1], store.events(resource: R)[1].then { [_1.owner, _1.token] }
    assert store.audit.valid?
    assert_equal [:rejected, :not_held], store.revoke(resource: "never", now: 5.0).then { [_1.status, _1.reason] }
  end
end
