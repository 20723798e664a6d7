# frozen_string_literal: true

require "support/active_job_support"

# The lease taken in around_perform works the same under ActiveJob's :inline adapter and, with real threads, its
# :async adapter (the background renewer, the wall and monotonic clocks).
class ActiveJobAdaptersTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  def test_inline_perform_later_holds_the_lease_and_releases_it
    seen = []
    job = job_class(:InlineJob) do
      self.queue_adapter = :inline
      holds_lease key: ->(key) { key }, ttl: 30.0
      define_method(:perform) { |_key| seen << [lease.state, lease.token] }
    end
    job.perform_later("acme")
    job.perform_later("acme")

    assert_equal [[:held, 1], [:held, 2]], seen
    assert_equal %i[released released], events_named(:release).map { _1[:status] }
  end

  def test_async_jobs_are_renewed_in_the_background_and_write_through_the_fence
    LeaseMachines::Jobs.configure do |config|
      config.clock = LeaseMachines::Jobs::Configuration::MONOTONIC
      config.renewal = :background
    end
    LeaseMachines::Jobs.store = -> { LeaseMachines::Store.new(path) }
    done = Thread::Queue.new
    ttl = 1.5
    waiting = method(:eventually)
    job = job_class(:AsyncJob) do
      self.queue_adapter = ActiveJob::QueueAdapters::AsyncAdapter.new(min_threads: 2, max_threads: 2)
      holds_lease key: ->(key) { key }, ttl: ttl, renew_every: 0.15, on_conflict: :raise
      define_method(:perform) do |key|
        # Runs past the TTL it was granted for, until the renewer has pushed the lease's expiry a TTL further: only
        # renewals keep it (seen on the lease, however slow the machine, not assumed after a sleep).
        granted = lease.expires_at
        waiting.call(30) { lease.expires_at >= granted + ttl } or raise "not renewed past its TTL"
        done << [key, lease.state, lease.fenced { Report.create!(body: key, token: lease.token).token }]
      rescue StandardError => e
        done << [key, e.class, e.message]
        raise
      end
    end
    job.perform_later("a")
    job.perform_later("b")
    results = [done.pop(timeout: 60), done.pop(timeout: 60)].sort

    assert_equal [["a", :held, 1], ["b", :held, 1]], results
    assert_equal %w[a b], events_named(:renew).map { _1[:resource].split(":").last }.uniq.sort, "each job's renewed"
    assert_empty events_named(:at_risk)
    assert_equal %w[a b], Report.order(:body).pluck(:body)
  ensure
    job&.queue_adapter&.shutdown
  end
end

# On PostgreSQL the async jobs' store is on the server's clock (Store.new(url) has none of its own).
LeaseMachines::ActiveJobSupport.on_postgresql(ActiveJobAdaptersTest)
