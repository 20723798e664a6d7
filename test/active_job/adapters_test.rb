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
    job = job_class(:AsyncJob) do
      self.queue_adapter = ActiveJob::QueueAdapters::AsyncAdapter.new(min_threads: 2, max_threads: 2)
      holds_lease key: ->(key) { key }, ttl: 0.6, renew_every: 0.15, on_conflict: :raise
      define_method(:perform) do |key|
        sleep 1.0 # longer than the TTL: only renewals keep the lease
        done << [key, lease.state, lease.fenced { Report.create!(body: key, token: lease.token).token }]
      rescue StandardError => e
        done << [key, e.class, e.message]
        raise
      end
    end
    job.perform_later("a")
    job.perform_later("b")
    results = [done.pop(timeout: 10), done.pop(timeout: 10)].sort

    assert_equal [["a", :held, 1], ["b", :held, 1]], results
    assert_operator events_named(:renew).size, :>=, 6, "about every 0.15 s for a second, for each job"
    assert_empty events_named(:at_risk)
    assert_equal %w[a b], Report.order(:body).pluck(:body)
  ensure
    job&.queue_adapter&.shutdown
  end
end

# On PostgreSQL the async jobs' store is on the server's clock (Store.new(url) has none of its own).
LeaseMachines::ActiveJobSupport.on_postgresql(ActiveJobAdaptersTest)
