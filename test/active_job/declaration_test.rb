# frozen_string_literal: true

require "support/active_job_support"

# holds_lease's arguments and the configuration: malformed input raises ArgumentError or TypeError saying what was
# wrong, when the class is defined, not when a job runs.
class ActiveJobDeclarationTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  def declare(**options)
    job_class(:DeclaredJob).holds_lease(**options)
  end

  # A named subclass of +parent+ (ActiveJob needs named classes to enqueue).
  def subclass(name, parent)
    support = LeaseMachines::ActiveJobSupport
    support.send(:remove_const, name) if support.const_defined?(name, false)
    support.const_set(name, Class.new(parent))
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
    assert_equal [:retry, 10.0, 3], [declaration.on_lost, declaration.lost_wait, declaration.lost_attempts]
    assert_equal :job, declaration.progress
  end

  def test_progress_is_kept_by_the_job_or_fenced_where_activejob_is_continuable
    key = ->(k) { k }
    refused(ArgumentError, /\Aholds_lease: progress: must be one of :job, :fenced, got :database\z/,
            key: key, ttl: 30.0, progress: :database)
    assert_equal :job, declare(key: key, ttl: 30.0, progress: :job).progress
    if defined?(ActiveJob::Continuable)
      assert_equal :fenced, declare(key: key, ttl: 30.0, progress: :fenced).progress
      refused(ArgumentError, /\Aholds_lease: progress: :fenced needs one holder of the key at a time, not limit:\z/,
              key: key, ttl: 30.0, progress: :fenced, limit: 2)
    else
      refused(ArgumentError, /\Aholds_lease: progress: :fenced is for ActiveJob::Continuable jobs, and ActiveJob /,
              key: key, ttl: 30.0, progress: :fenced)
    end
  end

  def test_lost_wait_defaults_to_wait_and_takes_durations
    declaration = declare(key: ->(key) { key }, ttl: 30.0, wait: 4.0, on_lost: :retry, lost_attempts: 7)
    assert_equal [4.0, 7], [declaration.lost_wait, declaration.lost_attempts]
    assert_equal 90.0, declare(key: ->(key) { key }, ttl: 30.0, lost_wait: 1.5.minutes).lost_wait
    assert_equal %i[discard raise],
                 %i[discard raise].map { declare(key: ->(key) { key }, ttl: 30.0, on_lost: _1).on_lost }
  end

  def test_durations_are_accepted
    declaration = declare(key: ->(key) { key }, ttl: 30.seconds, renew_every: 10.seconds, wait: 1.minute)

    assert_equal [30.0, 10.0, 60.0], [declaration.ttl, declaration.cadence.renew_every, declaration.wait]
  end

  def test_a_default_ttl_stands_in_for_a_missing_ttl_and_is_checked_when_set
    configuration = LeaseMachines::Jobs.configuration
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
    LeaseMachines::Jobs.configuration.default_ttl = nil
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
    refused(ArgumentError, /\Aholds_lease: on_lost: must be one of :retry, :discard, :raise, got :ignore\z/,
            key: key, ttl: 30.0, on_lost: :ignore)
    refused(ArgumentError, /\Aholds_lease: on_lost: must be one of :retry, :discard, :raise, got "retry"\z/,
            key: key, ttl: 30.0, on_lost: "retry")
    refused(ArgumentError, /\Aholds_lease: lost_wait: and lost_attempts: apply to on_lost: :retry only, not :discard\z/,
            key: key, ttl: 30.0, on_lost: :discard, lost_attempts: 2)
    refused(ArgumentError, /\Aholds_lease: lost_wait: and lost_attempts: apply to on_lost: :retry only, not :raise\z/,
            key: key, ttl: 30.0, on_lost: :raise, lost_wait: 1.0)
    refused(ArgumentError, /\Aholds_lease: wait: and attempts: apply to on_conflict: :retry only, not :raise\z/,
            key: key, ttl: 30.0, on_conflict: :raise, attempts: 2)
    refused(TypeError, /\Aholds_lease: lost_attempts: must be an Integer, got 2.5\z/, key: key, ttl: 30.0,
            lost_attempts: 2.5)
    refused(ArgumentError, /\Aholds_lease: lost_attempts: must be at least 1, got 0\z/, key: key, ttl: 30.0,
            lost_attempts: 0)
    refused(TypeError, /\Aholds_lease: lost_wait: must be a Duration or Float seconds, got "1"\z/, key: key,
            ttl: 30.0, lost_wait: "1")
    refused(ArgumentError, /\Aholds_lease: lost_wait: must be positive/, key: key, ttl: 30.0, lost_wait: 0)
    refused(ArgumentError, /attempts: must be at least 1/, key: key, ttl: 30.0, attempts: 0)
    refused(ArgumentError, /unknown option ttl_seconds/, key: key, ttl: 30.0, ttl_seconds: 1)
    refused(TypeError, /group: must be a String or Symbol/, key: key, ttl: 30.0, group: 7)
  end

  def test_the_cores_schedule_errors_say_holds_lease
    refused(ArgumentError, /\Aholds_lease: a cadence needs 0 < renew_every < ttl and warn_before < ttl, got ttl=10.0/,
            key: ->(k) { k }, ttl: 10.0, renew_every: 10.0)
    refused(ArgumentError, /\Aholds_lease: a cadence needs .* warn_before=12.0\z/,
            key: ->(k) { k }, ttl: 10.0, renew_every: 1.0, warn_before: 12.0)
  end

  def test_seconds_the_core_cannot_count_are_refused_when_declared
    key = ->(k) { k }
    limit = Regexp.escape("must be at most 2**63 seconds (about 292 billion years: a longer one overflows the " \
                          "lease's deadline)")
    refused(ArgumentError, /\Aholds_lease: ttl: #{limit}, got 18446744073709551616\z/, key: key, ttl: 2**64)
    refused(ArgumentError, /\Aholds_lease: ttl: #{limit}, got 1.8446744073709552e\+19\z/, key: key, ttl: 2.0**64)
    refused(ArgumentError, /\Aholds_lease: ttl: #{limit}/, key: key, ttl: (2**63) + 1)
    refused(ArgumentError, /\Aholds_lease: renew_every: #{limit}/, key: key, ttl: 30.0, renew_every: 2**64)
    refused(ArgumentError, /\Aholds_lease: warn_before: #{limit}/, key: key, ttl: 30.0, warn_before: 2**70)
    refused(ArgumentError, /\Aholds_lease: wait: #{limit}/, key: key, ttl: 30.0, wait: 2**64)
    refused(ArgumentError, /\Aholds_lease: ttl: #{limit}, got an Integer of 1329 bits\z/, key: key, ttl: 10**400)
    refused(ArgumentError, /\Aholds_lease: ttl: must be positive and finite, got Infinity\z/,
            key: key, ttl: Float::INFINITY)
    error = assert_raises(ArgumentError) { LeaseMachines::Jobs.configuration.default_ttl = 2**64 }
    assert_match(/\Adefault_ttl #{limit}, got 18446744073709551616\z/, error.message)
    assert_nil LeaseMachines::Jobs.configuration.default_ttl

    job = job_class(:AgelessJob) do
      holds_lease key: ->(k) { k }, ttl: 2**63
      def perform(_k) = nil
    end
    job.perform_now("acme") # the longest TTL: granted, its deadline counted without overflow

    # 1000 + 2**63 seconds, reported as the first Float at or after it (Floats are 2048 s apart there).
    assert_equal [[1, (2.0**63).next_float]], events_named(:acquire).map { [_1[:token], _1[:expires_at]] }
    assert_empty events_named(:conflict)
  end

  def test_group_nil_is_refused_as_nil_and_only_an_anonymous_class_needs_a_group
    error = assert_raises(ArgumentError) { declare(key: ->(k) { k }, ttl: 30.0, group: nil) }
    assert_equal "holds_lease: group: must not be nil (omit it to use the class name)", error.message

    anonymous = Class.new(::ActiveJob::Base) { include LeaseMachines::HoldsLease }
    error = assert_raises(ArgumentError) { anonymous.holds_lease(key: ->(k) { k }, ttl: 30.0) }
    assert_equal "holds_lease: group: is required for an anonymous job class (#{anonymous.inspect})", error.message
    assert_equal "reports", anonymous.holds_lease(key: ->(k) { k }, ttl: 30.0, group: :reports).group
  end

  def test_a_group_in_another_encoding_is_converted_to_utf8
    group = declare(key: ->(k) { k }, ttl: 30.0, group: "comptes-réglés".encode("UTF-16LE")).group

    assert_equal ["comptes-réglés", Encoding::UTF_8], [group, group.encoding]
    refused(ArgumentError, /\Aholds_lease: group: "\\xFF" is not valid UTF-8 \(ASCII-8BIT, read by its bytes\)\z/,
            key: ->(k) { k }, ttl: 30.0, group: "\xFF".b)
  end

  # A subclass is another job: its own group (its class name) unless the declaration named one.
  def test_a_subclass_takes_its_leases_in_its_own_group_unless_a_group_was_given
    parent = job_class(:ParentJob) do
      holds_lease key: ->(k) { k }, ttl: 30.0
      def perform(_k) = nil
    end
    subclass(:ChildJob, parent).perform_now("acme")
    parent.perform_now("acme")
    Class.new(parent).perform_now("acme") # no name of its own: the declaring class's group

    assert_equal [["LeaseMachines::ActiveJobSupport::ChildJob:acme", 1],
                  ["LeaseMachines::ActiveJobSupport::ParentJob:acme", 1],
                  ["LeaseMachines::ActiveJobSupport::ParentJob:acme", 2]],
                 events_named(:acquire).map { [_1[:resource], _1[:token]] }
    assert_kind_of LeaseMachines::ActiveJobSupport::ChildJob, events_named(:acquire).first[:job]

    grouped = job_class(:GroupedParentJob) do
      holds_lease key: ->(k) { k }, ttl: 30.0, group: "accounts"
      def perform(_k) = nil
    end
    subclass(:GroupedChildJob, grouped).perform_now("acme")
    grouped.perform_now("acme")

    assert_equal [["accounts:acme", 1], ["accounts:acme", 2]],
                 events_named(:acquire).last(2).map { [_1[:resource], _1[:token]] }
  end

  def test_keys_in_another_encoding_are_converted_to_utf8
    job = job_class(:EncodedJob) do
      holds_lease key: ->(value) { value }, ttl: 30.0
      def perform(_value) = nil
    end
    job.perform_now("relevé".encode("UTF-16LE"))
    job.perform_now("relevé".b) # read by its bytes, as every resource name is
    job.perform_now("relevé".dup.force_encoding("US-ASCII")) # UTF-8 read under the C locale
    job.perform_now(["日本".encode("Shift_JIS"), "été".encode("ISO-8859-1").to_sym])

    resources = events_named(:acquire).map { _1[:resource] }
    group = "LeaseMachines::ActiveJobSupport::EncodedJob"
    assert_equal ["#{group}:relevé"] * 3 + ["#{group}:日本,été"], resources
    assert_equal [Encoding::UTF_8], resources.map(&:encoding).uniq
    assert_equal [1, 2, 3, 1], events_named(:acquire).map { _1[:token] }, "one resource, whatever the encoding"
  end

  def test_keys_that_cannot_be_utf8_are_refused_naming_them
    job = job_class(:MisencodedJob) do
      holds_lease key: ->(value) { value }, ttl: 30.0
      def perform(_value) = nil
    end
    error = assert_raises(ArgumentError) { job.perform_now("\xD8\x00".dup.force_encoding("UTF-16BE")) }
    assert_match(/\Athe lease key "\\xD8\\x00" cannot be converted from UTF-16BE to UTF-8 \(/, error.message)
    error = assert_raises(ArgumentError) { job.perform_now(["ok", "caf\xE9".dup.force_encoding("UTF-8")]) }
    assert_equal 'the lease key "caf\xE9" is not valid UTF-8 (UTF-8, read by its bytes)', error.message
    error = assert_raises(ArgumentError) { job.perform_now("\xFF\xFE".b) }
    assert_equal 'the lease key "\xFF\xFE" is not valid UTF-8 (ASCII-8BIT, read by its bytes)', error.message
    assert_empty events_named(:acquire)
  end

  def test_an_empty_key_is_refused
    job = job_class(:EmptyKeyJob) do
      holds_lease key: ->(value) { value }, ttl: 30.0
      def perform(_value) = nil
    end

    assert_equal "the lease key is an empty String", assert_raises(ArgumentError) { job.perform_now("") }.message
    assert_equal "the lease key is an empty Symbol", assert_raises(ArgumentError) { job.perform_now(:"") }.message
    assert_equal "the lease key is an empty String",
                 assert_raises(ArgumentError) { job.perform_now(["a", ""]) }.message
    assert_empty events_named(:acquire)
  end

  def test_a_basic_object_is_a_type_error_saying_so
    ill_typed!
    basic = BasicObject.new
    key = ->(k) { k }
    refused(TypeError, /\Aholds_lease: key: must be a Proc or lambda of the job's arguments, got BasicObject\z/,
            key: basic, ttl: 30.0)
    refused(TypeError, /\Aholds_lease: group: must be a String or Symbol, got BasicObject\z/,
            key: key, ttl: 30.0, group: basic)
    refused(TypeError, /\Aholds_lease: ttl: must be a Duration or Float seconds, got BasicObject\z/,
            key: key, ttl: basic)
    refused(TypeError, /\Aholds_lease: attempts: must be an Integer, got BasicObject\z/,
            key: key, ttl: 30.0, attempts: basic)
    refused(ArgumentError, /\Aholds_lease: on_conflict: must be one of .*, got BasicObject\z/,
            key: key, ttl: 30.0, on_conflict: basic)
    config = LeaseMachines::Jobs.configuration
    assert_equal "default_ttl must be a Duration or Float seconds, got BasicObject",
                 assert_raises(TypeError) { config.default_ttl = basic }.message
    assert_equal "clock must respond to call, got BasicObject",
                 assert_raises(TypeError) { config.clock = basic }.message
    assert_raises(TypeError) { config.executor = basic }
    assert_raises(TypeError) { config.error_handler = basic }
    assert_raises(TypeError) { config.jitter = basic }
    assert_raises(TypeError) { LeaseMachines::Jobs.store = basic }
    assert_raises(TypeError) { LeaseMachines::Jobs.fence_record = basic }

    job = job_class(:BasicKeyJob) do
      holds_lease key: ->(_value) { BasicObject.new }, ttl: 30.0
      def perform(_value) = nil
    end
    error = assert_raises(TypeError) { job.perform_now("acme") }
    assert_equal "the lease key must be a record, String, Symbol, Integer or an Array of them, got BasicObject",
                 error.message
  end

  def test_a_lease_is_declared_once_per_job_class
    job = job_class(:OnceJob) { holds_lease key: ->(k) { k }, ttl: 30.0 }
    error = assert_raises(ArgumentError) { job.holds_lease key: ->(k) { k }, ttl: 30.0 }
    assert_match(/already holds a lease/, error.message)
    assert_raises(ArgumentError) { Class.new(job).holds_lease key: ->(k) { k }, ttl: 30.0 }
  end

  def test_only_job_classes_include_it
    error = assert_raises(TypeError) { Class.new { include LeaseMachines::HoldsLease } }
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
    config = LeaseMachines::Jobs.configuration
    error = assert_raises(TypeError) { LeaseMachines::Jobs.store = "db.sqlite3" }
    assert_match(/store must be a LeaseMachines::Store or a factory/, error.message)
    assert_raises(TypeError) { LeaseMachines::Jobs.fence_record = Object }
    assert_raises(TypeError) { config.clock = 1.0 }
    assert_raises(TypeError) { config.executor = Object.new }
    assert_raises(ArgumentError) { config.renewal = :never }
    assert_raises(ArgumentError) { config.jitter = 1.0 }
  end

  def test_a_job_without_a_store_says_so
    LeaseMachines::Jobs.store = nil
    job = job_class(:StorelessJob) do
      holds_lease key: ->(k) { k }, ttl: 30.0
      def perform(_k) = nil
    end

    assert_match(/no lease store/, assert_raises(ArgumentError) { job.perform_now("acme") }.message)
  end

  def test_one_store_shared_by_the_jobs_and_the_renewer
    LeaseMachines::Jobs.store = other_store
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

  # What a job class of +name+ performs in a forked child (Solid Queue's workers, Puma's): its lease's token, or the
  # StoreError's message.
  def performed_in_a_forked_child(name)
    job = job_class(name) do
      holds_lease key: ->(k) { k }, ttl: 30.0
      def perform(_k) = lease.token
    end
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      writer.puts "token #{job.perform_now("acme")}"
    rescue LeaseMachines::StoreError => e
      writer.puts e.message
    ensure
      exit!(0)
    end
    writer.close
    Process.wait(pid)
    [job, reader.read]
  ensure
    reader&.close
  end

  def test_a_store_given_as_is_is_opened_again_in_a_forked_child_as_activerecord_reconnects
    plain_suite_only!("a forked child process")
    LeaseMachines::Jobs.store = other_store
    job, said = performed_in_a_forked_child(:ForkedJob)
    assert_equal "token 1\n", said, "the child's own connection, opened from the same path"
    resource = "#{job.name}:acme"
    assert_equal %i[acquired released], other_store.events(resource: resource).map(&:kind)
    assert_equal 2, other_store.acquire(resource: resource, owner: 1, ttl: 30.0).lease.token, "the parent's still works"
  end

  def test_a_store_on_a_connection_the_application_gave_is_refused_in_a_forked_child
    plain_suite_only!("a forked child process")
    given = LeaseMachines::Store.new(SQLite3::Database.new(path), clock: clock.to_proc)
    LeaseMachines::Jobs.store = given
    job, said = performed_in_a_forked_child(:ForkedOnGivenJob)
    assert_match(/opened before fork on a connection the application gave it, which is the parent's; set .* to a factory/,
                 said)
    assert_nil given.checkpoint(resource: "#{job.name}:acme").lease
  ensure
    given&.database&.close
  end
end
