# frozen_string_literal: true

require "support/active_job_support"

# holds_lease limit: N on SQLite and (ActiveJobLimitPostgreSQLTest) PostgreSQL: up to N performs of one key hold it
# at once, each in a slot of its own with its own token, renewals and fence; the next one is a conflict.
class ActiveJobLimitTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  # A job whose body records its lease and runs the next perform of the same key from inside itself, +depth+ deep:
  # the outer performs still hold their slots.
  def nested_job(limit:, on_conflict: :raise)
    seen = @seen = []
    job_class(:ExportJob) do
      holds_lease key: ->(account, _depth) { account }, ttl: 30.0, renew_every: 10.0, limit: limit,
                  on_conflict: on_conflict
      define_method(:perform) do |account, depth|
        seen << lease
        lease.fenced { Report.create!(body: "#{account} #{lease.slot}", token: lease.token) }
        self.class.perform_now(account, depth - 1) if depth > 1
      end
    end
  end

  def test_up_to_the_limit_of_performs_hold_the_key_at_once_each_in_its_slot
    nested_job(limit: 2).perform_now("acme", 2)

    assert_equal [0, 1], @seen.map(&:slot)
    assert_equal [1, 1], @seen.map(&:token), "each slot's own first token"
    assert_equal [["acme 0", 1], ["acme 1", 1]], Report.order(:id).pluck(:body, :token)
    assert_equal %i[released released], events_named(:release).map { _1[:status] }
    assert_equal [0, 1], events_named(:acquire).map { _1[:slot] }, "each event says its slot"
    assert_equal [1, 0], events_named(:release).map { _1[:slot] }, "the inner perform ends first"
    assert_equal [nil, nil], [0, 1].map { other_store.checkpoint(resource: @seen.first.resource, slot: _1).lease }
  end

  def test_one_more_than_the_limit_is_a_conflict
    error = assert_raises(LeaseMachines::LeaseBusy) { nested_job(limit: 2).perform_now("acme", 3) }
    assert_equal @seen.first.resource, error.resource
    assert_equal 2, @seen.size, "the third perform did not run"
    assert_equal [:raise], events_named(:conflict).map { _1[:action] }
  end

  def test_a_slot_is_renewed_and_released_by_its_holder
    seen = []
    test_clock = clock
    job = job_class(:RenewedExportJob) do
      holds_lease key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, limit: 3
      define_method(:perform) do |_account|
        seen << lease
        test_clock.advance(10.0)
        LeaseMachines::Jobs.renewer.renew_due
      end
    end
    resource = "#{job.name}:acme"
    elsewhere = other_store.acquire(resource: resource, owner: 999, ttl: 300.0, limit: 3).lease
    job.perform_now("acme")

    assert_equal [1], seen.map(&:slot)
    assert_equal [1_040.0], events_named(:renew).map { _1[:expires_at] }
    assert_nil other_store.checkpoint(resource: resource, slot: 1).lease, "released"
    assert_equal elsewhere.token, other_store.checkpoint(resource: resource, slot: 0).lease.token, "slot 0 untouched"
  end

  def test_a_stalled_holder_can_neither_write_into_nor_free_its_successors_slot
    successor = refused = nil
    test_clock = clock
    store = other_store
    job = job_class(:StalledExportJob) do
      holds_lease key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, limit: 2
      define_method(:perform) do |account|
        test_clock.advance(31.0) # stalled past its TTL: its slot goes to another worker
        successor = store.acquire(resource: "#{self.class.name}:#{account}", owner: 999, ttl: 30.0, limit: 2).lease
        begin
          lease.fenced { Report.create!(body: "stale", token: lease.token) }
        rescue LeaseMachines::Fenced => e
          refused = e.reason
        end
      end
    end
    job.perform_now("acme")

    assert_equal [0, 2], [successor.slot, successor.token], "the successor took the stalled holder's slot"
    assert_equal :stale_token, refused
    assert_empty Report.all
    assert_equal [[:rejected, :stale_token]], events_named(:release).map { [_1[:status], _1[:reason]] }
    kept = other_store.checkpoint(resource: "#{job.name}:acme", slot: 0).lease
    assert_equal [999, 2], [kept.owner, kept.token], "the successor keeps its slot"
  end

  # Records the lease store's requests (acquire, renew, release, fenced) that this thread makes while +requests+ is set.
  module CountedRequests
    %i[acquire renew release fenced].each do |name|
      define_method(name) do |**keywords, &block|
        Thread.current[:lease_machines_requests]&.<<(name)
        super(**keywords, &block)
      end
    end
  end
  LeaseMachines::Store.prepend(CountedRequests) if LEASE_MACHINES_RAILS

  def counted_requests
    Thread.current[:lease_machines_requests] = []
    yield
    Thread.current[:lease_machines_requests]
  ensure
    Thread.current[:lease_machines_requests] = nil
  end

  def test_a_job_that_ends_within_its_first_renewal_period_costs_three_store_requests
    [nil, 1, 4].each do |limit|
      job = job_class(:CountedJob) do
        holds_lease key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, **(limit ? { limit: limit } : {})
        define_method(:perform) { |account| lease.fenced { Report.create!(body: account, token: lease.token) } }
      end
      job.perform_now("warm-up #{limit}") # the stores opened, once per process
      requests = counted_requests { ::ActiveJob::Base.queue_adapter = :inline; job.perform_later("acme #{limit}") }

      assert_equal %i[acquire fenced release], requests, "limit: #{limit.inspect}"
    end
  end

  def test_a_limit_is_checked_when_declared
    assert_raises(ArgumentError) { job_class(:BadLimitJob) { holds_lease key: ->(a) { a }, ttl: 30.0, limit: 0 } }
    error = assert_raises(ArgumentError) do
      job_class(:BadLimitJob) { holds_lease key: ->(a) { a }, ttl: 30.0, limit: 1025 }
    end
    assert_equal "holds_lease: limit: must be from 1 to 1024, got 1025", error.message
    assert_raises(TypeError) { job_class(:BadLimitJob) { holds_lease key: ->(a) { a }, ttl: 30.0, limit: "2" } }
  end
end

LeaseMachines::ActiveJobSupport.on_postgresql(ActiveJobLimitTest)

# On MySQL (MariaDB here), through ActiveRecord's mysql2 adapter.
LeaseMachines::ActiveJobSupport.on_mysql(ActiveJobLimitTest)
