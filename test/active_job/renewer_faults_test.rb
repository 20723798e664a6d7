# frozen_string_literal: true

require "support/active_job_support"

# The background renewer survives what it reports: subscribers and error handlers that raise, a store factory that
# raises an Exception that is no StandardError. Only an interrupt, Thread#kill or #stop ends it; #stop then returns,
# and the next job starts a new thread. Real threads on the monotonic clock, with cadences of a fraction of a second.
class ActiveJobRenewerFaultsTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  # An error of a store factory's own that no `rescue => e` catches.
  class FactoryBroken < Exception; end

  def setup
    super
    LeaseMachines::Jobs.configure do |config|
      config.clock = LeaseMachines::Jobs::Configuration::MONOTONIC
      config.renewal = :background
    end
  end

  # A stop that raises fails this test, not the whole run (an Interrupt re-raised by it would end the run), and the
  # renewer it left unusable is replaced for the next tests.
  def teardown
    renewer.stop
  rescue Exception => e
    LeaseMachines::Jobs.instance_variable_set(:@renewer, nil)
    flunk "Renewer#stop raised #{e.class}: #{e.message}"
  ensure
    super
  end

  def resource = "LeaseMachines::ActiveJobSupport::FaultyJob:acme"

  # A job renewed every 0.15 s whose perform runs +body+ (given the job).
  def leased_job(&body)
    job_class(:FaultyJob) do
      holds_lease key: ->(key) { key }, ttl: 0.6, renew_every: 0.15
      define_method(:perform) { |_key| body.call(self) }
    end
  end

  # Opens the job's store, then calls +renewers+ for each store the renewer asks for.
  def store_factory(&renewers)
    path = self.path
    clock = self.clock
    opened = 0
    LeaseMachines::Jobs.store = lambda do
      opened += 1
      opened == 1 ? FlakyStore.new(path, clock: clock.to_proc) : renewers.call
    end
  end

  def renewer_thread = Thread.list.find { _1.name == "lease_machines renewer" && _1.alive? }

  def test_a_subscriber_that_raises_on_renew_and_thread_error_does_not_stop_it
    subscription = ActiveSupport::Notifications.subscribe(/\A(renew|thread_error)\.lease_machines\z/) do
      raise "subscriber down"
    end
    seen = nil
    _, stderr = capture_io do
      leased_job do
        seen = eventually { events_named(:renew).size >= 3 }
        seen &&= renewer.running?
      end.perform_now("acme")
    end

    assert seen, "renewed 3 times, still running (#{events_named(:renew).size} renewals)"
    assert_equal [RuntimeError], @errors.map { _1.first.class }.uniq
    assert_equal({ during: "renewal", resource: resource, token: 1 }, @errors.first.last)
    assert_includes stderr.lines, "lease_machines: renewal: reporting RuntimeError (subscriber down) " \
                                  "raised RuntimeError: subscriber down\n"
  ensure
    ActiveSupport::Notifications.unsubscribe(subscription)
  end

  def test_an_error_handler_that_raises_does_not_stop_it
    LeaseMachines::Jobs.configuration.error_handler = ->(*) { raise ArgumentError, "handler down" }
    store_factory { FlakyStore.new(path, clock: clock.to_proc).tap { _1.failing = true } }
    seen = nil
    _, stderr = capture_io do
      leased_job do
        seen = eventually { events_named(:thread_error).size >= 3 }
        seen &&= renewer.running?
      end.perform_now("acme")
    end

    assert seen, "3 failed renewals, still running (#{events_named(:thread_error).size} reported)"
    assert_equal [LeaseMachines::StoreError], events_named(:thread_error).map { _1[:error].class }.uniq
    reported = "reporting LeaseMachines::StoreError \\(lease store .*: disk I/O error \\(injected\\)\\)"
    assert_match(/^lease_machines: renewal: #{reported} raised ArgumentError: handler down$/, stderr)
  end

  def test_a_factory_raising_an_exception_that_is_no_standard_error_is_reported_and_retried
    failures = [FactoryBroken.new("no connection"), LoadError.new("cannot load such file -- pg")]
    store_factory do
      raise failures.shift unless failures.empty?

      FlakyStore.new(path, clock: clock.to_proc)
    end
    seen = nil
    leased_job do |job|
      seen = eventually { events_named(:renew).any? }
      seen &&= [renewer.running?, job.lease.token]
    end.perform_now("acme")

    assert_equal [true, 1], seen, "renewed through the third store the factory was asked for"
    assert_equal [[FactoryBroken, "no connection"], [LoadError, "cannot load such file -- pg"]],
                 @errors.map { [_1.first.class, _1.first.message] }
    assert_equal [resource, resource], events_named(:thread_error).map { _1[:resource] }
  end

  def test_a_failing_factory_backs_off
    store_factory { nil }
    reports = nil
    leased_job do
      sleep 1.0
      reports = events_named(:thread_error).size
    end.perform_now("acme")

    # A tenth of renew_every was 0.015 s: about 60 reports in this second. Backed off: after the first renewal at
    # about 0.15 s, 0.1 s (the floor) three times, then 0.12 s, then renew_every (0.15 s): about 9.
    assert_operator reports, :<=, 15
    assert_operator reports, :>=, 2
  end

  def test_an_interrupt_stops_it_stop_returns_and_the_next_job_starts_it_again
    interrupt = true
    store_factory do
      raise Interrupt if interrupt

      FlakyStore.new(path, clock: clock.to_proc)
    end
    stopped = nil
    capture_io do # the thread's death is reported on stderr (report_on_exception)
      leased_job do
        eventually { !renewer.running? }
        stopped = begin
          renewer.stop
          :stopped
        rescue Exception => e
          e
        end
      end.perform_now("acme")
    end

    assert_equal :stopped, stopped
    refute renewer.running?
    interrupt = false
    running = nil
    leased_job { running = renewer.running? && eventually { events_named(:renew).any? } }.perform_now("acme")

    assert running, "a new thread renewed the next job's lease"
  end

  def test_a_stop_from_the_renewers_own_thread_ends_it_after_its_pass
    stops = []
    subscription = ActiveSupport::Notifications.subscribe("renew.lease_machines") { stops << renewer.stop }
    ended = nil
    leased_job { ended = eventually { !stops.empty? && !renewer.running? } }.perform_now("acme")
    ActiveSupport::Notifications.unsubscribe(subscription)
    restarted = nil
    leased_job { restarted = renewer.running? && eventually { events_named(:renew).size >= 2 } }.perform_now("acme")

    assert_equal [true, [nil], [], true], [ended, stops, @errors, restarted]
  ensure
    ActiveSupport::Notifications.unsubscribe(subscription)
  end

  def test_thread_kill_thread_raise_and_stop_still_stop_it
    store_factory { raise FactoryBroken, "down" } # retried with backoff until stopped
    ended = []
    leased_job do
      eventually { @errors.size >= 2 }
      ended << renewer_thread.kill.join(5)&.status
    end.perform_now("acme")
    capture_io do # the thread's death is reported on stderr (report_on_exception)
      leased_job do
        eventually { @errors.size >= 4 }
        thread = renewer_thread
        thread.raise(Interrupt)
        ended << begin
          thread.join(5)
        rescue Interrupt => e
          e.class
        end
        ended << thread.status
      end.perform_now("acme")
    end
    leased_job do
      eventually { @errors.size >= 6 }
      renewer.stop
      ended << renewer.running? << renewer_thread
    end.perform_now("acme")

    assert_equal [false, Interrupt, nil, false, nil], ended
  end
end
