# frozen_string_literal: true

require "support/store_rules"

# Every argument of the store checked as the contract says, with the same exception class and message on every
# store; the application's own transactions left alone or joined; a store shared by threads and fibers, or closed,
# raising StoreError with nothing half-written (test/store/inputs_test.rb).
module StoreInputRules
  include LeaseMachines::TestSupport::StoreRules

  R = "nightly-report"

  def store = @store ||= open_store(clock: LeaseMachines::TestSupport::STILL_CLOCK)

  def write(conn, token) = sql(conn, "INSERT INTO report VALUES (?)", [token])

  def create_report = sql(store.database, "CREATE TABLE report (token bigint)")

  def test_a_made_up_token_on_a_resource_never_granted_is_refused_and_sets_no_mark
    error = assert_raises(ArgumentError) { store.fenced(resource: R, token: 1_000_000) { flunk "must not run" } }
    assert_equal "nightly-report: token 1000000 was never issued (no lease was ever granted on it)", error.message
    assert_nil store.fence_highest(resource: R)
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    assert_equal :ok, store.fenced(resource: R, token: lease.token) { :ok }, "a real token is still accepted"
  end

  def test_resources_are_non_empty_utf8_strings_of_bounded_size
    ill_typed!
    [123, ["123"], :nightly, nil, BasicObject.new].each do |resource|
      error = assert_raises(TypeError) { store.acquire(resource: resource, owner: 1, ttl: 1.0, now: 0.0) }
      assert_match(/\Aresource must be a String, got /, error.message)
    end
    assert_equal "resource must not be empty", assert_raises(ArgumentError) { store.checkpoint(resource: "") }.message
    assert_match(/\Aresource must be valid UTF-8, got /,
                 assert_raises(ArgumentError) { store.revision(resource: "\xff".b) }.message)
    long = "x" * (LeaseMachines::MAX_RESOURCE_BYTES + 1)
    assert_equal "resource must be at most 1024 bytes of UTF-8, got 1025 bytes",
                 assert_raises(ArgumentError) { store.fenced(resource: long, token: 1) { flunk } }.message
    assert_equal 0, store.resource_count, "no lease row was written"
  end

  def test_the_same_utf8_bytes_name_the_same_lease_whatever_the_strings_encoding
    lease = granted(store.acquire(resource: "relevé", owner: 7, ttl: 5.0, now: 0.0))
    assert_equal lease, store.checkpoint(resource: "relevé".b).lease
    name = store.resources.first.resource
    assert_equal ["relevé", Encoding::UTF_8], [name, name.encoding]
  end

  def test_now_false_is_refused_not_read_as_the_wall_clock
    ill_typed!
    error = assert_raises(TypeError) { store.acquire(resource: R, owner: 1, ttl: 1.0, now: false) }
    assert_equal "now must be seconds as a Float or an Integer, got FalseClass false", error.message
    assert_equal 0, store.revision(resource: R)
  end

  def test_busy_timeout_takes_seconds_in_its_range
    ill_typed!
    assert_raises(TypeError) { open_store(busy_timeout: "5") }
    open_store(busy_timeout: nil).close # the default
    [Float::NAN, -1, -0.001, Float::INFINITY, 3e6].each do |seconds|
      error = assert_raises(ArgumentError) { open_store(busy_timeout: seconds) }
      assert_match(/\Abusy_timeout must be between 0 and 2147483\.647 seconds, got /, error.message)
    end
    open_store(busy_timeout: 0).close
  end

  def test_a_clock_that_cannot_be_called_is_refused
    ill_typed!
    error = assert_raises(TypeError) { open_store(clock: 12.0) }
    assert_equal "clock must respond to call, got 12.0", error.message
  end

  def test_a_clock_that_calls_the_store_back_is_refused_and_nothing_is_half_written
    called_back = nil
    clock = lambda do
      called_back.acquire(resource: "other", owner: 1, ttl: 1.0, now: 0.0)
      10.0
    end
    called_back = open_store(clock: clock)
    error = assert_raises(LeaseMachines::StoreError) { called_back.acquire(resource: R, owner: 7, ttl: 5.0) }
    assert_match(/called from inside one of its own requests/, error.message)
    refute in_transaction?(called_back)
    assert_equal [0, 0], [called_back.revision(resource: R), called_back.revision(resource: "other")]
  end

  def test_transfer_checks_the_new_owner_even_when_the_release_is_refused
    ill_typed!
    store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0)
    error = assert_raises(RangeError) do
      store.transfer(resource: R, owner: 7, token: 99, new_owner: -1, ttl: 5.0, now: 1.0)
    end
    assert_equal "new_owner must be in 0..2**64-1, got -1", error.message, "named as Table#transfer names it"
    refused = store.transfer(resource: R, owner: 7, token: 99, new_owner: 8, ttl: 5.0, now: 1.0)
    assert_equal :stale_token, refused.reason
  end

  def test_a_decision_inside_the_applications_transaction_is_refused_and_leaves_it_alone
    db = store.database
    sql(db, "CREATE TABLE report (body varchar(20))")
    sql(db, "BEGIN")
    sql(db, "INSERT INTO report VALUES ('draft')")
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0) }
    assert_match(/a decision cannot commit inside an open transaction/, error.message)
    assert in_transaction?
    sql(db, "COMMIT")
    assert_equal [["draft"]], sql(db, "SELECT body FROM report")
    assert_equal 0, store.revision(resource: R)
  end

  def test_fenced_joins_the_applications_transaction_and_commits_or_rolls_back_with_it
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    db = store.database
    create_report
    sql(db, "BEGIN")
    store.fenced(resource: R, token: lease.token) { |conn| write(conn, lease.token) }
    assert in_transaction?, "the application's transaction is still open"
    sql(db, "ROLLBACK")
    assert_nil store.fence_highest(resource: R), "the mark rolled back with the application's transaction"
    assert_empty reported
    sql(db, "BEGIN")
    store.fenced(resource: R, token: lease.token) { |conn| write(conn, lease.token) }
    assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 0) { flunk } }
    assert in_transaction?, "a refusal rolls back to its savepoint, not the whole transaction"
    sql(db, "COMMIT")
    assert_equal 1, store.fence_highest(resource: R)
    assert_equal [1], reported
  end

  def test_a_decision_from_inside_a_fenced_block_is_refused_and_the_block_rolls_back
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    assert_raises(LeaseMachines::StoreError) do
      store.fenced(resource: R, token: lease.token) do
        store.renew(resource: R, owner: 7, token: 1, ttl: 5.0, now: 1.0)
      end
    end
    assert_nil store.fence_highest(resource: R)
    assert_equal 5.0, store.checkpoint(resource: R).lease.expires_at
    nested = store.fenced(resource: R, token: 1) { store.fenced(resource: "other", token: 1) { :inner } rescue $! }
    assert_kind_of ArgumentError, nested, "a nested fenced call joins, and refuses a token never issued"
  end

  def test_a_fiber_suspended_inside_a_fenced_block_keeps_others_out_until_it_finishes
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    create_report
    writer = Enumerator.new do |y|
      store.fenced(resource: R, token: lease.token) do |db|
        y << :inside
        write(db, lease.token)
      end
      y << :committed
    end
    assert_equal :inside, writer.next
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: "b", owner: 1, ttl: 1.0, now: 0.0) }
    assert_match(/another thread or fiber is inside a request of this store/, error.message)
    assert_equal :committed, writer.next
    assert_equal [1], reported
    assert_equal 1, granted(store.acquire(resource: "b", owner: 1, ttl: 1.0, now: 0.0)).token
  end

  def test_a_transaction_left_open_by_a_collected_fiber_is_rolled_back_by_the_next_request
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    create_report
    abandon = lambda do
      writer = Enumerator.new do |y|
        store.fenced(resource: R, token: lease.token) do |db|
          write(db, 1)
          y << :inside
        end
      end
      writer.next
    end
    abandon.call
    20.times do
      GC.start(full_mark: true, immediate_sweep: true)
      break unless store.instance_variable_get(:@claim)&.weakref_alive?
    end
    skip "the abandoned fiber was not collected" if store.instance_variable_get(:@claim)&.weakref_alive?

    assert_equal 1, granted(store.acquire(resource: "b", owner: 1, ttl: 1.0, now: 0.0)).token
    assert_empty reported, "the abandoned write was rolled back"
    assert_nil store.fence_highest(resource: R)
  end

  def test_a_name_changed_during_the_request_changes_nothing_the_request_does
    5.times { |i| store.reacquire(resource: "B", owner: 1, ttl: 1.0, now: i * 2.0) }
    name = +"A"
    renaming = open_store(clock: -> { name.replace("B") && 100.0 })
    assert_equal 1, granted(renaming.acquire(resource: name, owner: 99, ttl: 1.0)).token
    assert_equal [1, 5], %w[A B].map { renaming.checkpoint(resource: _1).last_issued }
  end

  def test_two_threads_sharing_a_store_get_store_errors_and_every_returned_write_is_committed
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 1e9, now: 0.0))
    create_report
    errors = Queue.new
    returned = Queue.new
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 1.5
    workers = [0, 1].map do |kind|
      Thread.new do
        while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
          begin
            if kind.zero?
              store.acquire(resource: "other", owner: 1, ttl: 1.0, now: 0.0)
            else
              store.fenced(resource: R, token: lease.token) { |db| write(db, lease.token) }
              returned << 1
            end
          rescue LeaseMachines::StoreError => e
            errors << e.message
          end
        end
      end
    end
    workers.each(&:join) # a NoMethodError or any other exception would surface here
    refute in_transaction?
    assert_equal returned.size, reported.size
    messages = Array.new(errors.size) { errors.pop }
    assert messages.all?(/another thread or fiber is inside a request of this store/), messages.uniq.first(3).inspect
  end

  def test_a_closed_store_raises_store_error
    store.close
    %i[acquire checkpoint fenced].each do |call|
      error = assert_raises(LeaseMachines::StoreError, call.to_s) do
        case call
        when :acquire then store.acquire(resource: R, owner: 1, ttl: 1.0, now: 0.0)
        when :checkpoint then store.checkpoint(resource: R)
        else store.fenced(resource: R, token: 1) { flunk }
        end
      end
      assert_match(/the store is closed/, error.message)
    end
  end

  def test_a_block_that_ends_the_stores_transaction_raises_store_error
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    error = assert_raises(LeaseMachines::StoreError) do
      store.fenced(resource: R, token: lease.token) { |db| sql(db, "COMMIT") }
    end
    assert_match(/the block of fenced ended the store's transaction/, error.message)
    assert_equal 1, granted(store.reacquire(resource: R, owner: 7, ttl: 5.0, now: 1.0)).token - 1, "still usable"
  end

  def test_fenced_needs_a_block
    ill_typed!
    error = assert_raises(ArgumentError) { store.fenced(resource: R, token: 1) }
    assert_equal "fenced needs a block (the write it protects) or statements:", error.message
  end
end
