# frozen_string_literal: true

require "test_helper"
require "timeout"

# Every malformed input raises the exception the contract names, with a message naming the argument and the value;
# the object it was given to is left unchanged.
class InputsTest < Minitest::Test
  HUGE = 2**200
  BAD_INTEGERS = {
    nil => [TypeError, "owner must be an Integer in 0..2**64-1, got NilClass nil"],
    "1" => [TypeError, 'owner must be an Integer in 0..2**64-1, got String "1"'],
    :a => [TypeError, "owner must be an Integer in 0..2**64-1, got Symbol :a"],
    1.0 => [TypeError, "owner must be an Integer in 0..2**64-1, got Float 1.0"],
    1r => [TypeError, "owner must be an Integer in 0..2**64-1, got Rational (1/1)"],
    -1 => [RangeError, "owner must be in 0..2**64-1, got -1"],
    2**64 => [RangeError, "owner must be in 0..2**64-1, got 18446744073709551616"],
    HUGE => [RangeError, "owner must be in 0..2**64-1, got #{2**200}"]
  }.freeze

  BAD_TIMES = {
    -1 => ArgumentError,
    -0.5 => ArgumentError,
    Float::NAN => ArgumentError,
    Float::INFINITY => ArgumentError,
    -Float::INFINITY => ArgumentError,
    2**65 => ArgumentError,
    1e300 => ArgumentError,
    HUGE => ArgumentError,
    nil => TypeError,
    "1.0" => TypeError,
    :now => TypeError,
    1r => TypeError
  }.freeze

  def setup
    ill_typed!
    @authority = LeaseMachines::Authority.new
    @authority.acquire(owner: 1, now: 1.0, ttl: 10.0)
    @before = @authority.checkpoint
  end

  def teardown
    assert_equal @before, @authority.checkpoint, "a raising call changes nothing" if @authority
  end

  def test_owners_must_be_integers_in_range
    BAD_INTEGERS.each do |value, (exception, message)|
      error = assert_raises(exception, "owner: #{value.inspect}") { @authority.acquire(owner: value, now: 2.0, ttl: 1.0) }
      assert_equal message, error.message
    end
  end

  def test_tokens_must_be_integers_in_range
    BAD_INTEGERS.each do |value, (exception, message)|
      error = assert_raises(exception) { @authority.renew(owner: 1, token: value, now: 2.0, ttl: 1.0) }
      assert_equal message.sub("owner", "token"), error.message
      assert_raises(exception) { @authority.release(owner: 1, token: value, now: 2.0) }
    end
  end

  def test_times_and_ttls_must_be_finite_non_negative_seconds
    BAD_TIMES.each do |value, exception|
      error = assert_raises(exception, "now: #{value.inspect}") { @authority.acquire(owner: 2, now: value, ttl: 1.0) }
      assert_match(/\Anow must be /, error.message)
      error = assert_raises(exception, "ttl: #{value.inspect}") { @authority.acquire(owner: 2, now: 2.0, ttl: value) }
      assert_match(/\Attl must be /, error.message)
    end
  end

  def test_time_messages_say_what_is_accepted
    error = assert_raises(ArgumentError) { @authority.acquire(owner: 2, now: -1.0, ttl: 1.0) }
    assert_equal "now must be finite, non-negative seconds up to 2**64, got -1.0", error.message
    error = assert_raises(TypeError) { @authority.acquire(owner: 2, now: 1.0, ttl: "5") }
    assert_equal 'ttl must be seconds as a Float or an Integer, got String "5"', error.message
  end

  def test_integer_seconds_and_negative_zero_are_accepted
    authority = LeaseMachines::Authority.new
    assert_equal 5.0, authority.acquire(owner: 1, now: -0.0, ttl: 5).lease.expires_at
    @authority = nil
  end

  def test_missing_or_unknown_keywords_are_argument_errors
    assert_raises(ArgumentError) { @authority.acquire(owner: 1, now: 2.0) }
    assert_raises(ArgumentError) { @authority.acquire(owner: 1, now: 2.0, ttl: 1.0, token: 1) }
    assert_raises(ArgumentError) { @authority.acquire(1, 2.0, 1.0) }
  end

  def test_clock_policy_must_be_a_known_symbol
    error = assert_raises(ArgumentError) { LeaseMachines::Authority.new(clock_policy: :lenient) }
    assert_equal "unknown clock_policy :lenient (valid: :reject, :clamp)", error.message
    error = assert_raises(TypeError) { LeaseMachines::Authority.new(clock_policy: "clamp") }
    assert_equal 'clock_policy must be a Symbol (:reject or :clamp), got "clamp"', error.message
  end

  def test_restore_needs_a_checkpoint
    assert_raises(TypeError) { LeaseMachines::Authority.restore(nil) }
    assert_raises(TypeError) { LeaseMachines::Authority.restore({ last_issued: 1 }) }
  end

  def test_fence_inputs
    fence = LeaseMachines::Fence.new(highest: 3)
    BAD_INTEGERS.each do |value, (exception, message)|
      error = assert_raises(exception) { fence.accept(value) }
      assert_equal message.sub("owner", "token"), error.message
    end
    assert_equal 3, fence.highest
    error = assert_raises(ArgumentError) { LeaseMachines::Fence.new(highest: 0) }
    assert_equal "highest must be an issued token (1..2**64-1), got 0", error.message
    assert_raises(TypeError) { LeaseMachines::Fence.new(highest: 2.0) }
    assert_raises(RangeError) { LeaseMachines::Fence.new(highest: -2) }
  end

  def test_value_inputs
    assert_raises(ArgumentError) { LeaseMachines::Lease.new(owner: 1, token: 0, expires_at: 1.0) }
    assert_raises(TypeError) { LeaseMachines::Lease.new(owner: 1.5, token: 1, expires_at: 1.0) }
    assert_raises(ArgumentError) { LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: Float::NAN) }
    error = assert_raises(TypeError) { LeaseMachines::Checkpoint.new(last_issued: 1, lease: {}, observed: 0.0) }
    assert_equal "lease must be a LeaseMachines::Lease or nil, got {}", error.message
    assert_raises(ArgumentError) { LeaseMachines::Checkpoint.new(last_issued: 0, lease: nil, observed: 0.0) }
    lease = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 1.0)
    error = assert_raises(ArgumentError) { LeaseMachines::Checkpoint.new(last_issued: nil, lease: lease, observed: 0.0) }
    assert_equal "impossible checkpoint: lease token 1 was never issued (last_issued is nil)", error.message
    error = assert_raises(ArgumentError) { LeaseMachines::Cadence.new(ttl: 10.0, renew_every: 10.0, warn_before: 1.0) }
    assert_equal "a cadence needs 0 < renew_every < ttl and warn_before < ttl, got ttl=10.0 renew_every=10.0 " \
                 "warn_before=1.0", error.message
  end

  def test_holder_inputs
    cadence = LeaseMachines::Cadence.new(ttl: 10.0, renew_every: 5.0, warn_before: 1.0)
    assert_raises(ArgumentError) { LeaseMachines::Holder.new(token: 0, at: 0.0, cadence: cadence) }
    assert_raises(TypeError) { LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: { ttl: 10.0 }) }
    holder = LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: cadence)
    assert_raises(ArgumentError) { holder.refresh(now: -1.0) }
    assert_raises(RangeError) { holder.confirm(token: -1, at: 1.0) }
    assert_raises(TypeError) { holder.renewal_due?(now: nil) }
    assert_equal :confirmed, holder.state
  end

  def test_arguments_that_must_be_gem_objects_say_so
    error = assert_raises(TypeError) { LeaseMachines::Authority.restore(Object.new) }
    assert_match(/\Acheckpoint must be a LeaseMachines::Checkpoint, got #<Object/, error.message)
    error = assert_raises(TypeError) { LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: 5) }
    assert_equal "cadence must be a LeaseMachines::Cadence, got 5", error.message
  end

  def test_messages_name_the_real_class_of_an_object_with_singleton_methods
    odd = Object.new
    def odd.to_int = 1
    error = assert_raises(TypeError) { @authority.acquire(owner: odd, now: 2.0, ttl: 1.0) }
    assert_match(/\Aowner must be an Integer in 0..2\*\*64-1, got Object #<Object/, error.message)
  end

  def test_a_symbol_that_is_not_utf8_is_an_unknown_clock_policy
    error = assert_raises(ArgumentError) { LeaseMachines::Authority.new(clock_policy: "\xff".b.to_sym) }
    assert_match(/\Aunknown clock_policy/, error.message)
  end

  def test_no_class_can_be_allocated_uninitialised
    [LeaseMachines::Authority, LeaseMachines::Fence, LeaseMachines::Holder, LeaseMachines::Lease,
     LeaseMachines::Checkpoint, LeaseMachines::Cadence].each do |klass|
      assert_raises(TypeError, klass.name) { klass.allocate }
    end
  end

  def test_a_gigantic_integer_is_described_not_printed
    error = assert_raises(RangeError) { @authority.acquire(owner: 2**(2**20), now: 2.0, ttl: 1.0) }
    assert_equal "owner must be in 0..2**64-1, got an Integer of 1048577 bits", error.message
  end

  def test_a_huge_value_is_shown_shortened
    error = assert_raises(RangeError) { @authority.acquire(owner: 10**100, now: 2.0, ttl: 1.0) }
    assert_operator error.message.length, :<, 100
    assert error.message.end_with?("...")
  end
end

# Arguments that do not behave: a BasicObject (no #inspect, no #is_a?), an #inspect that raises, returns something
# other than a String or is huge, a #to_str that raises, Strings whose encoding does not say UTF-8. Each is a
# TypeError or ArgumentError (InvalidDocument for a document) naming the argument, with a bounded message.
class MisbehavingInputsTest < Minitest::Test
  def setup
    ill_typed!
  end

  # An object whose #inspect is +behaviour+: raises, returns an Integer, or returns a megabyte.
  def odd(behaviour)
    Object.new.tap do |object|
      case behaviour
      when :raises then def object.inspect = raise("inspect broke")
      when :integer then def object.inspect = 42
      when :huge then def object.inspect = "x" * 1_000_000
      end
    end
  end

  def each_call(value)
    cadence = LeaseMachines::Cadence.new(ttl: 10.0, renew_every: 5.0, warn_before: 1.0)
    lease = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0)
    authority = LeaseMachines::Authority.new
    holder = LeaseMachines::Holder.new(token: 1, at: 0.0, cadence:)
    table = LeaseMachines::Table.new
    guard = LeaseMachines::FenceGuard.new
    table_lease = LeaseMachines::Table.new.acquire(resource: "r", owner: 1, now: 0.0, ttl: 1.0).lease
    checkpoint = LeaseMachines::Checkpoint.new(last_issued: 1, lease: nil, observed: 0.0)
    {
      "Authority.new" => -> { LeaseMachines::Authority.new(clock_policy: value) },
      "Authority.restore" => -> { LeaseMachines::Authority.restore(value) },
      "Authority#acquire" => -> { authority.acquire(owner: value, now: 0.0, ttl: 1.0) },
      "Authority#renew" => -> { authority.renew(owner: 1, token: value, now: 0.0, ttl: 1.0) },
      "Authority#release" => -> { authority.release(owner: 1, token: 1, now: value) },
      "Fence.new" => -> { LeaseMachines::Fence.new(highest: value) },
      "Fence#accept" => -> { LeaseMachines::Fence.new.accept(value) },
      "Holder.new" => -> { LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: value) },
      "Holder#refresh" => -> { holder.refresh(now: value) },
      "Holder#confirm" => -> { holder.confirm(token: value, at: 1.0) },
      "Holder#at_risk?" => -> { holder.at_risk?(now: value) },
      "Table.new" => -> { LeaseMachines::Table.new(event_capacity: value) },
      "Table.from_json" => -> { LeaseMachines::Table.from_json(value) },
      "Table#acquire" => -> { table.acquire(resource: value, owner: 1, now: 0.0, ttl: 1.0) },
      "Table#lease" => -> { table.lease(value) },
      "Table#apply_batch" => -> { table.apply_batch(value) },
      "Table#apply_batch entry" => -> { table.apply_batch([value]) },
      "TableLease#live?" => -> { table_lease.live?(now: value) },
      "Checkpoint#issued?" => -> { checkpoint.issued?(value) },
      "Table#acquire_leadership" => -> { table.acquire_leadership(resource: "r", certificate: value, owner: 1, now: 0.0, ttl: 1.0) },
      "FenceGuard.new" => -> { LeaseMachines::FenceGuard.new(marks: value) },
      "FenceGuard.new marks" => -> { LeaseMachines::FenceGuard.new(marks: [value]) },
      "FenceGuard.from_json" => -> { LeaseMachines::FenceGuard.from_json(value) },
      "FenceGuard#check" => -> { guard.check(value) },
      "FenceGuard#highest" => -> { guard.highest(value) },
      "Election.quorum_size" => -> { LeaseMachines::Election.quorum_size(value) },
      "Election.select_candidate" => -> { LeaseMachines::Election.select_candidate([value]) },
      "Election.certify_votes" => -> { LeaseMachines::Election.certify_votes(votes: [], members: [value], term: 1) },
      "Simulation.new" => -> { LeaseMachines::Simulation.new(value) },
      "Simulation#step" => -> { LeaseMachines::Simulation.new.step(value) },
      "simulate" => -> { LeaseMachines.simulate(value) },
      "simulate with members" => -> { LeaseMachines.simulate(value, cycles: 1) },
      "audit" => -> { LeaseMachines.audit([value]) },
      "events_from_json" => -> { LeaseMachines.events_from_json(value) },
      "Lease.new" => -> { LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: value) },
      "Lease#live?" => -> { lease.live?(now: value) },
      "Checkpoint.new" => -> { LeaseMachines::Checkpoint.new(last_issued: nil, lease: value, observed: 0.0) },
      "Checkpoint.from_json" => -> { LeaseMachines::Checkpoint.from_json(value) },
      "Cadence.new" => -> { LeaseMachines::Cadence.new(ttl: value, renew_every: 1.0, warn_before: 0.5) },
      "Metrics.from_json" => -> { LeaseMachines::Metrics.from_json(value) },
      "SimulationReport.from_json" => -> { LeaseMachines::SimulationReport.from_json(value) }
    }
  end

  # The argument each call above names in its message.
  ARGUMENT = /\A(clock_policy|checkpoint|owner|token|now|highest|cadence|event_capacity|json|resource|certificate|
               marks|write|members|candidates|member|config|cycles|events|expires_at|lease|ttl|commands|commands\[0\])\ must\ /x

  def test_a_basic_object_is_a_type_error_naming_the_argument
    each_call(BasicObject.new).each do |call, body|
      error = assert_raises(TypeError, call, &body)
      assert_match ARGUMENT, error.message, call
      assert_match(/, got (BasicObject )?BasicObject\z/, error.message, call)
    end
  end

  def test_a_raising_non_string_or_huge_inspect_gives_a_short_message
    %i[raises integer huge].each do |behaviour|
      each_call(odd(behaviour)).each do |call, body|
        error = assert_raises(TypeError, "#{call} (#{behaviour})", &body)
        assert_match ARGUMENT, error.message, call
        assert_operator error.message.length, :<=, 200, "#{call} (#{behaviour})"
        # Some messages name only the class; those that show the value show at most 61 of its characters and "...".
        shown = behaviour == :huge ? "(Object )?x{61}\\.\\.\\." : "(Object )?Object"
        assert_match(/, got (Object|#{shown})\z/, error.message, "#{call} (#{behaviour})")
      end
    end
  end

  def test_the_shown_value_is_bounded_and_never_raises
    assert_equal "BasicObject", LeaseMachines.shown(BasicObject.new)
    assert_equal "Object", LeaseMachines.shown(odd(:raises))
    assert_equal "Object", LeaseMachines.shown(odd(:integer))
    assert_equal "#{"x" * 61}...", LeaseMachines.shown(odd(:huge))
    assert_equal ":a", LeaseMachines.shown(:a)
    error = assert_raises(TypeError) { LeaseMachines.simulate("a" * 1_000_000) }
    assert_equal "config must be a LeaseMachines::SimulationConfig, got \"#{"a" * 60}...", error.message
  end

  def test_a_document_is_a_string_never_converted
    convertible = Object.new
    def convertible.to_str = raise("to_str broke")
    error = assert_raises(TypeError) { LeaseMachines::Table.from_json(convertible) }
    assert_match(/\Ajson must be a String, got Object #<Object/, error.message)
    error = assert_raises(TypeError) { LeaseMachines::Checkpoint.from_json(:json) }
    assert_equal "json must be a String, got Symbol :json", error.message
  end

  def test_utf8_bytes_are_read_whatever_the_strings_encoding
    table = LeaseMachines::Table.new
    table.acquire(resource: "café", owner: 1, now: 0.0, ttl: 5.0)
    json = table.to_json
    [json.b, json.dup.force_encoding(Encoding::US_ASCII), json.encode(Encoding::UTF_16LE),
     json.encode(Encoding::ISO_8859_1)].each do |text|
      assert_equal ["café"], LeaseMachines::Table.from_json(text).events.map(&:resource) |
                             [LeaseMachines::Table.from_json(text).lease("café").resource], text.encoding.name
    end
    events = LeaseMachines.events_to_json(table.events)
    assert_equal table.events, LeaseMachines.events_from_json(events.b)
    ["café".b, "café".dup.force_encoding(Encoding::US_ASCII), "café".encode(Encoding::ISO_8859_1),
     "café".encode(Encoding::UTF_16LE), "café".dup.force_encoding(Encoding::ISO_8859_1)].each do |name|
      assert_equal 1, table.lease(name)&.token, "#{name.encoding} #{name.bytes}"
    end
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::Table.from_json("{\xff}".b) }
    error = assert_raises(ArgumentError) { table.lease("caf\xe9".b) }
    assert_match(/\Aresource must be valid UTF-8, got /, error.message)
  end
end

# Subclasses of the gem's classes: their constructors make instances of the subclass, and what the extension
# decides never depends on a method a subclass may override.
class SubclassesTest < Minitest::Test
  CADENCE = LeaseMachines::Cadence.new(ttl: 10.0, renew_every: 5.0, warn_before: 1.0)

  def test_constructors_make_instances_of_the_subclass
    {
      LeaseMachines::Authority => [-> { _1.new }, -> { _1.restore(LeaseMachines::Authority.new.checkpoint) }],
      LeaseMachines::Fence => [-> { _1.new(highest: 2) }],
      LeaseMachines::Holder => [-> { _1.new(token: 1, at: 0.0, cadence: CADENCE) }],
      LeaseMachines::Table => [-> { _1.new }, -> { _1.from_json(LeaseMachines::Table.new.to_json) }],
      LeaseMachines::FenceGuard => [-> { _1.new }, -> { _1.from_json(LeaseMachines::FenceGuard.new.to_json) }],
      LeaseMachines::Simulation => [-> { _1.new }]
    }.each do |base, constructors|
      subclass = Class.new(base) { def extra = :mine }
      constructors.each do |construct|
        made = construct.call(subclass)
        assert_instance_of subclass, made, base.name
        assert_equal :mine, made.extra
      end
      assert_instance_of base, constructors.first.call(base)
    end
  end

  def test_a_subclass_table_decides_as_the_table
    table = Class.new(LeaseMachines::Table).new
    assert_equal 1, granted(table.acquire(resource: "r", owner: 1, now: 0.0, ttl: 1.0)).token
  end

  # A configuration whose reader says more cycles than it holds: the simulation runs the cycles it holds and
  # finishes (it used to step forever, asking the reader whether it was done).
  def test_a_simulation_finishes_by_the_configuration_it_read
    lying = Class.new(LeaseMachines::SimulationConfig) { def cycles = 10**9 }
    simulation = LeaseMachines::Simulation.new(lying.new(cycles: 50))
    report = Timeout.timeout(10) { simulation.finish }
    assert_equal [50, 50, true], [report.cycles, simulation.cycles_run, simulation.finished?]
  end
end
