# frozen_string_literal: true

require "support/active_job_support"

# The renewer: renewals on the Holder's cadence through its own store, a failing store leading to at_risk then lost,
# errors reported and emitted, never silent.
class ActiveJobRenewalTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  def leased_job(ttl: 30.0, renew_every: 10.0, warn_before: 5.0, &body)
    job_class(:RenewedJob) do
      holds_lease key: ->(key) { key }, ttl: ttl, renew_every: renew_every, warn_before: warn_before
      define_method(:perform) { |_key| body.call(self) }
    end
  end

  def resource = "LeaseMachines::ActiveJobSupport::RenewedJob:acme"

  def test_nothing_is_renewed_before_it_is_due
    leased_job do
      clock.advance(9.0)
      renewer.renew_due
    end.perform_now("acme")

    assert_empty events_named(:renew)
  end

  def test_the_renewer_renews_through_a_store_of_its_own
    stores = nil
    leased_job do
      clock.advance(10.0)
      renewer.renew_due
      stores = @stores.dup
    end.perform_now("acme")

    assert_equal 2, stores.size, "the job's thread's store and the renewer's"
    assert_equal [1_040.0], events_named(:renew).map { _1[:expires_at] }
  end

  def test_the_next_wait_is_the_earliest_renewal_the_holders_ask_for
    waits = []
    leased_job do
      waits << renewer.renew_due
      clock.advance(10.0)
      waits << renewer.renew_due
    end.perform_now("acme")

    assert_equal [10.0, 10.0], waits
  end

  def test_a_failing_store_makes_the_lease_at_risk_then_lost_and_reports_every_error
    seen = []
    leased_job do |job|
      clock.advance(10.0)
      renewer.renew_due # confirmed: deadlines now count from 1010
      seen << job.lease.state
      @stores.last.failing = true
      clock.advance(10.0)
      assert_equal 1.0, renewer.renew_due, "an unconfirmed renewal is retried after renew_every / 10"
      seen << job.lease.state # 1020: sent, unconfirmed, before the warning deadline (1035)
      clock.advance(15.0)
      renewer.renew_due
      seen << job.lease.state # 1035: past the warning deadline, still unconfirmed
      seen << assert_raises(LeaseMachines::LeaseLost) { job.lease.check! }.state
      seen << job.lease.remaining
      clock.advance(6.0) # 1041: the authority's lease (to 1040) has run out; a successor takes it
      other_store.acquire(resource: resource, owner: 999, ttl: 30.0)
      @stores.last.failing = false
      renewer.renew_due
      seen << job.lease.state
    end.perform_now("acme")

    assert_equal [:held, :held, :at_risk, :at_risk, 0.0, :lost], seen
    assert_equal 2, @errors.size
    assert_equal [LeaseMachines::StoreError], @errors.map { _1.first.class }.uniq
    assert_equal({ during: "renewal", resource: resource, token: 1 }, @errors.first.last)
    assert_equal 2, events_named(:thread_error).size
    assert_equal [resource], events_named(:thread_error).map { _1[:resource] }.uniq
    assert_equal [[:held, nil, 0.0]], events_named(:at_risk).map { [_1[:previous], _1[:reason], _1[:remaining]] }
    assert_equal [[:at_risk, :stale_token]], events_named(:lost).map { [_1[:previous], _1[:reason]] }
  end

  # A store factory that opens the job's store, then +renewer+ for the renewer's (nil, a broken factory, at first).
  def store_factory(renewer)
    path = self.path
    clock = self.clock
    opened = 0
    LeaseMachines::Jobs.store = lambda do
      opened += 1
      opened == 1 ? FlakyStore.new(path, clock: clock.to_proc) : renewer.call
    end
  end

  def test_failures_back_off_and_a_clean_pass_ends_the_backoff
    broken = true
    own = nil
    store_factory(-> { own = FlakyStore.new(path, clock: clock.to_proc) unless broken })
    waits = []
    leased_job do |job|
      clock.advance(10.0)
      6.times { waits << renewer.renew_due } # a tenth of renew_every, doubled each time, at most renew_every
      broken = false
      waits << renewer.renew_due # renewed: the next renewal is due renew_every after the first attempt
      waits << job.lease.state
      clock.advance(10.0)
      own.failing = true # the renewer's store, kept: a failure after a clean pass backs off from the start
      waits << renewer.renew_due
    end.perform_now("acme")

    assert_equal [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, :held, 1.0], waits
    assert_equal [TypeError] * 6 + [LeaseMachines::StoreError], @errors.map { _1.first.class }
    assert_equal "the store factory returned nil, not a LeaseMachines::Store", @errors.first.first.message
    assert_equal 7, events_named(:thread_error).size
  end

  def test_a_short_renew_every_backs_off_no_sooner_than_a_tenth_of_a_second
    store_factory(-> {})
    waits = []
    leased_job(ttl: 0.6, renew_every: 0.15, warn_before: 0.15) do
      clock.advance(0.15)
      6.times { waits << renewer.renew_due.round(9) }
    end.perform_now("acme")

    assert_equal [0.1, 0.1, 0.1, 0.12, 0.15, 0.15], waits
  end

  def test_a_background_renewer_stops_renewing_when_the_job_ends
    LeaseMachines::Jobs.configuration.renewal = :background
    running = nil
    leased_job { running = renewer.running? }.perform_now("acme")

    assert running
    assert_empty renewer.leases
  end

  def test_the_executor_wraps_each_pass
    wrapped = []
    executor = Object.new
    executor.define_singleton_method(:wrap) { |&block| wrapped << :in; block.call.tap { wrapped << :out } }
    LeaseMachines::Jobs.configuration.executor = executor
    leased_job { renewer.renew_due }.perform_now("acme")

    assert_equal %i[in out], wrapped
  ensure
    LeaseMachines::Jobs.configuration.executor = nil
  end

  def test_rails_error_receives_the_errors_when_rails_is_there
    reported = []
    rails = Module.new
    reporter = Object.new
    reporter.define_singleton_method(:report) { |error, **context| reported << [error.class, context[:source]] }
    rails.define_singleton_method(:error) { reporter }
    # Rails 8.1's minitest plugin (railties) may have defined the real one: it is put back after.
    real = Object.send(:remove_const, :Rails) if defined?(::Rails)
    Object.const_set(:Rails, rails)
    leased_job do
      clock.advance(10.0)
      renewer.renew_due # opens the renewer's store
      @stores.last.failing = true
      clock.advance(10.0)
      renewer.renew_due
    end.perform_now("acme")

    assert_equal [[LeaseMachines::StoreError, "lease_machines"]], reported
    assert_empty @errors
  ensure
    Object.send(:remove_const, :Rails) if defined?(::Rails)
    Object.const_set(:Rails, real) if real
  end

  def test_a_forked_child_forgets_the_parents_leases
    plain_suite_only!("a forked child process")
    child = nil
    leased_job do
      pid = fork { exit!(renewer.leases.empty? && !renewer.running? ? 0 : 1) }
      child = Process.wait2(pid).last
      assert_equal 1, renewer.leases.size, "the parent still renews its job's lease"
    end.perform_now("acme")

    assert_predicate child, :success?
  end

  def test_a_finished_lease_is_neither_renewed_nor_reported
    lease = nil
    leased_job { |job| lease = job.lease }.perform_now("acme")
    clock.advance(10.0)
    other_store.acquire(resource: resource, owner: 999, ttl: 30.0)
    LeaseMachines::Jobs.pool.with { |store| lease.renew_if_due { store.renew(**_1) } }

    assert lease.finished?
    assert_empty events_named(:renew)
    assert_empty events_named(:lost), "the job ended and released its lease: nothing was lost"
  end
end
