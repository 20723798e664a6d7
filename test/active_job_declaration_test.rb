# frozen_string_literal: true

require "active_job_support"

# holds_lease's arguments and the configuration: malformed input raises ArgumentError or TypeError saying what was
# wrong, when the class is defined, not when a job runs.
class ActiveJobDeclarationTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  def declare(**options)
    job_class(:DeclaredJob).holds_lease(**options)
  end

  def refused(error_class, pattern, **options)
    error = assert_raises(error_class) { declare(**options) }
    assert_match pattern, error.message
  end

  def test_defaults
    declaration = declare(key: ->(key) { key }, ttl: 30.0)

    assert_equal LeaseMachines::Cadence.new(ttl: 30.0, renew_every: 10.0, warn_before: 10.0), declaration.cadence
    assert_equal [:retry, 10.0, 10, "LeaseMachines::ActiveJobSupport::DeclaredJob"],
                 [declaration.on_conflict, declaration.wait, declaration.attempts, declaration.group]
  end

  def test_durations_are_accepted
    declaration = declare(key: ->(key) { key }, ttl: 30.seconds, renew_every: 10.seconds, wait: 1.minute)

    assert_equal [30.0, 10.0, 60.0], [declaration.ttl, declaration.cadence.renew_every, declaration.wait]
  end

  def test_a_default_ttl_stands_in_for_a_missing_ttl_and_is_checked_when_set
    configuration = LeaseMachines::ActiveJob.configuration
    configuration.default_ttl = 1.minute
    assert_equal 60.0, configuration.default_ttl
    assert_equal LeaseMachines::Cadence.new(ttl: 60.0, renew_every: 20.0, warn_before: 20.0),
                 declare(key: ->(key) { key }).cadence
    assert_equal 5.0, declare(key: ->(key) { key }, ttl: 5).ttl, "a ttl: of the job's own wins"

    error = assert_raises(TypeError) { configuration.default_ttl = "30" }
    assert_equal 'default_ttl must be a Duration or Float seconds, got "30"', error.message
    error = assert_raises(ArgumentError) { configuration.default_ttl = 0 }
    assert_equal "default_ttl must be positive and finite, got 0", error.message
    assert_raises(ArgumentError) { configuration.default_ttl = Float::INFINITY }
    assert_equal 60.0, configuration.default_ttl, "a refused value changes nothing"

    configuration.default_ttl = nil
    refused(ArgumentError, /holds_lease: ttl: is required \(or a default_ttl in the configuration\)/,
            key: ->(key) { key })
  ensure
    LeaseMachines::ActiveJob.configuration.default_ttl = nil
  end

  def test_malformed_options_say_what_was_wrong
    key = ->(k) { k }
    refused(ArgumentError, /key: is required/, ttl: 30.0)
    refused(TypeError, /key: must be a Proc/, key: "account", ttl: 30.0)
    refused(ArgumentError, /ttl: is required/, key: key)
    refused(TypeError, /ttl: must be a Duration or Float seconds, got "30"/, key: key, ttl: "30")
    refused(ArgumentError, /ttl: must be positive/, key: key, ttl: -1.0)
    refused(ArgumentError, /renew_every/, key: key, ttl: 10.0, renew_every: 10.0) # the core's Cadence rule
    refused(ArgumentError, /on_conflict: must be one of :retry, :discard, :raise, got :skip/,
            key: key, ttl: 30.0, on_conflict: :skip)
    refused(ArgumentError, /wait: and attempts: apply to on_conflict: :retry only/,
            key: key, ttl: 30.0, on_conflict: :discard, wait: 1.0)
    refused(TypeError, /attempts: must be an Integer/, key: key, ttl: 30.0, attempts: 2.5)
    refused(ArgumentError, /attempts: must be at least 1/, key: key, ttl: 30.0, attempts: 0)
    refused(ArgumentError, /unknown option ttl_seconds/, key: key, ttl: 30.0, ttl_seconds: 1)
    refused(TypeError, /group: must be a String or Symbol/, key: key, ttl: 30.0, group: 7)
  end

  def test_a_lease_is_declared_once_per_job_class
    job = job_class(:OnceJob) { holds_lease key: ->(k) { k }, ttl: 30.0 }
    error = assert_raises(ArgumentError) { job.holds_lease key: ->(k) { k }, ttl: 30.0 }
    assert_match(/already holds a lease/, error.message)
    assert_raises(ArgumentError) { Class.new(job).holds_lease key: ->(k) { k }, ttl: 30.0 }
  end

  def test_only_job_classes_include_it
    error = assert_raises(TypeError) { Class.new { include LeaseMachines::ActiveJob } }
    assert_match(/for ActiveJob job classes/, error.message)
  end

  def test_keys_that_cannot_name_a_resource
    job = job_class(:KeyedJob) do
      holds_lease key: ->(value) { value }, ttl: 30.0
      def perform(_value) = nil
    end

    assert_match(/has no id yet/, assert_raises(ArgumentError) { job.perform_now(Account.new) }.message)
    assert_match(/must be a record, String, Symbol, Integer/, assert_raises(TypeError) { job.perform_now(1.5) }.message)
    job.perform_now([Account.create!, :daily, 7])
    assert_equal ["LeaseMachines::ActiveJobSupport::KeyedJob:Account/1,daily,7"],
                 events_named(:acquire).map { _1[:resource] }
  end

  def test_configuration_refuses_what_it_cannot_use
    ill_typed!
    config = LeaseMachines::ActiveJob.configuration
    error = assert_raises(TypeError) { LeaseMachines::ActiveJob.store = "db.sqlite3" }
    assert_match(/store must be a LeaseMachines::Store or a factory/, error.message)
    assert_raises(TypeError) { LeaseMachines::ActiveJob.fence_record = Object }
    assert_raises(TypeError) { config.clock = 1.0 }
    assert_raises(TypeError) { config.executor = Object.new }
    assert_raises(ArgumentError) { config.renewal = :never }
    assert_raises(ArgumentError) { config.jitter = 1.0 }
  end

  def test_a_job_without_a_store_says_so
    LeaseMachines::ActiveJob.store = nil
    job = job_class(:StorelessJob) do
      holds_lease key: ->(k) { k }, ttl: 30.0
      def perform(_k) = nil
    end

    assert_match(/no lease store/, assert_raises(ArgumentError) { job.perform_now("acme") }.message)
  end

  def test_one_store_shared_by_the_jobs_and_the_renewer
    LeaseMachines::ActiveJob.store = other_store
    tokens = []
    job = job_class(:SharedStoreJob) do
      holds_lease key: ->(k) { k }, ttl: 30.0, renew_every: 10.0
      define_method(:perform) { |_k| tokens << lease.token }
    end
    job.perform_now("a")
    job.perform_now("a")

    assert_equal [1, 2], tokens
    assert_empty @stores, "no store was opened: the given one is used"
  end

  def test_a_store_given_as_is_is_refused_in_a_forked_child
    plain_suite_only!("a forked child process")
    LeaseMachines::ActiveJob.store = other_store
    job = job_class(:ForkedJob) do
      holds_lease key: ->(k) { k }, ttl: 30.0
      def perform(_k) = nil
    end
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      job.perform_now("acme")
      writer.puts "performed"
    rescue LeaseMachines::StoreError => e
      writer.puts e.message
    ensure
      exit!(0)
    end
    writer.close
    Process.wait(pid)

    assert_match(/opened before fork and its connection is the parent's; set .* to a factory/, reader.read)
    assert_nil other_store.checkpoint(resource: "#{job.name}:acme").lease
  ensure
    reader&.close
  end
end
