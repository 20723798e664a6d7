# frozen_string_literal: true

require "support/active_job_support"
require "stringio"

# Every lease_machines event carries job, resource, owner, token and slot; the LogSubscriber writes them to ActiveJob's
# logger, lost and conflict at warn.
class ActiveJobNotificationsTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  def setup
    super
    @log = StringIO.new
    @logger = ActiveJob::Base.logger
    formatter = ->(severity, _, _, line) { "#{severity} #{line}\n" }
    ActiveJob::Base.logger = Logger.new(@log, level: :info, formatter: formatter)
  end

  def teardown
    ActiveJob::Base.logger = @logger
    super
  end

  def leased_job(**options, &body)
    job_class(:NotifiedJob) do
      holds_lease key: ->(k) { k }, ttl: 30.0, renew_every: 10.0, **options
      define_method(:perform) { |_k| body&.call(self) }
    end
  end

  def test_every_event_carries_job_resource_owner_and_token
    leased_job do |job|
      clock.advance(10.0)
      renewer.renew_due
      job.lease.fenced { Report.create!(body: "x") }
      clock.advance(31.0)
      other_store.acquire(resource: job.lease.resource, owner: 999, ttl: 30.0)
      renewer.renew_due
    end.perform_now("acme")
    leased_job(on_conflict: :discard).perform_now("acme")

    names = @events.map(&:name).uniq
    assert_equal %w[acquire.lease_machines renew.lease_machines fenced_write.lease_machines lost.lease_machines
                    release.lease_machines conflict.lease_machines], names
    @events.each do |event|
      assert_equal %i[job resource owner token slot], event.payload.keys.first(5), event.name
      assert_equal "LeaseMachines::ActiveJobSupport::NotifiedJob:acme", event.payload[:resource]
      assert_kind_of ActiveJob::Base, event.payload[:job]
    end
    assert_equal [1], @events.reject { _1.name.start_with?("conflict") }.map { _1.payload[:token] }.uniq
  end

  def test_the_log_subscriber_logs_lost_and_conflict_at_warn
    leased_job do |job|
      clock.advance(31.0)
      other_store.acquire(resource: job.lease.resource, owner: 999, ttl: 30.0)
      renewer.renew_due
    end.perform_now("acme")
    leased_job(on_conflict: :discard).perform_now("acme")

    lines = @log.string.lines.grep(/\[lease_machines\]/)
    assert(lines.any? { _1.start_with?("WARN") && _1.include?("lost (stale_token)") }, lines.join)
    assert(lines.any? { _1.start_with?("WARN") && _1.include?("held by another owner; discard") }, lines.join)
    assert(lines.any? { _1.start_with?("INFO") && _1.include?("token 1: acquired") }, lines.join)
  end

  def test_the_log_subscriber_names_a_semaphores_slot
    leased_job(limit: 2).perform_now("acme")

    lines = @log.string.lines.grep(/\[lease_machines\]/)
    assert(lines.any? { _1.start_with?("INFO") && _1.include?("NotifiedJob:acme slot 0 token 1: acquired") },
           lines.join)
    assert(lines.any? { _1.include?("NotifiedJob:acme slot 0 token 1: released: released") }, lines.join)
  end

  # Rails 8.1's structured event reporter gets the same events, named "lease_machines.<event>", with plain values.
  def test_rails_structured_event_reporter_gets_each_event_with_plain_values
    reporter = ActiveSupport.respond_to?(:event_reporter) && ActiveSupport.event_reporter
    skip "Rails #{ActiveSupport.version} has no structured event reporter (Rails 8.1 does)" unless reporter
    reported = []
    subscriber = Object.new
    subscriber.define_singleton_method(:emit) { |event| reported << event }
    reporter.subscribe(subscriber) { _1[:name].start_with?("lease_machines.") }
    job = nil
    leased_job do |performed|
      job = performed
      performed.lease.fenced { Report.create!(body: "x") }
    end.perform_now("acme")

    assert_equal %w[lease_machines.acquire lease_machines.fenced_write lease_machines.release], reported.map { _1[:name] }
    reported.each do |event|
      payload = event[:payload]
      assert_equal "LeaseMachines::ActiveJobSupport::NotifiedJob", payload[:job_class], event[:name]
      assert_equal job.job_id, payload[:job_id]
      assert_equal ["LeaseMachines::ActiveJobSupport::NotifiedJob:acme", 1], payload.values_at(:resource, :token)
      refute payload.key?(:job)
    end
    assert_equal :written, reported[1][:payload][:outcome]
    assert_equal :released, reported[2][:payload][:status]
  ensure
    reporter&.unsubscribe(subscriber) if subscriber
  end
end
