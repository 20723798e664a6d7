# frozen_string_literal: true

require "support/store_rules"

# Semaphores in the store (acquire with limit:), on SQLite (StoreSemaphoreTest) and PostgreSQL
# (StoreSemaphorePostgreSQLTest): the same decisions as slot rows kept in memory for the same random requests, the
# slot rules through the database, each slot's fence, and a limit of 1 being the plain lease.
module StoreSemaphoreRules
  R = "reports"
  include LeaseMachines::TestSupport::StoreRules

  def acquire(owner, limit, now, ttl: 10.0) = store.acquire(resource: R, owner: owner, ttl: ttl, limit: limit, now: now)

  def test_grants_fill_the_lowest_free_slots_up_to_the_limit_and_no_further
    leases = [7, 12].map { |owner| acquire(owner, 2, 0.0).lease }
    assert_equal [[0, 7, 1], [1, 12, 1]], leases.map { [_1.slot, _1.owner, _1.token] }
    assert_kind_of LeaseMachines::SlotLease, leases.first
    refused = acquire(19, 2, 1.0)
    assert_equal [:rejected, :occupied], [refused.status, refused.reason]
    assert_equal :released, store.release(resource: R, owner: 7, token: 1, slot: 0, now: 2.0).status
    assert_equal [0, 19, 2], acquire(19, 2, 3.0).lease.then { [_1.slot, _1.owner, _1.token] }
  end

  def test_a_stalled_holder_cannot_free_renew_or_write_into_its_successors_slot
    acquire(7, 2, 0.0)
    acquire(12, 2, 0.0, ttl: 60.0)
    successor = acquire(31, 2, 11.0).lease # worker 7 stalled past its TTL
    assert_equal [0, 2], [successor.slot, successor.token]
    assert_equal :stale_token, store.release(resource: R, owner: 7, token: 1, slot: 0, now: 12.0).reason
    assert_equal :stale_token, store.renew(resource: R, owner: 7, token: 1, ttl: 10.0, slot: 0, now: 12.0).reason
    wrote = false
    error = assert_raises(LeaseMachines::Fenced) do
      store.fenced(resource: R, token: 1, slot: 0, now: 12.0) { wrote = true }
    end
    refute wrote
    assert_equal :stale_token, error.reason
    assert_equal successor.to_h.except(:slot), store.checkpoint(resource: R, slot: 0).lease.to_h
    # The successor writes in its slot; slot 1's fence is its own.
    assert_equal :ok, store.fenced(resource: R, token: 2, slot: 0, now: 12.0) { :ok }
    assert_equal :ok, store.fenced(resource: R, token: 1, slot: 1, now: 12.0) { :ok }
    assert_equal [2, 1], [store.fence_highest(resource: R, slot: 0), store.fence_highest(resource: R, slot: 1)]
  end

  def test_a_lowered_limit_revokes_nothing_and_grants_wait_until_fewer_are_live
    3.times { acquire(_1 + 1, 3, 0.0) }
    store.release(resource: R, owner: 1, token: 1, slot: 0, now: 1.0)
    assert_equal :occupied, acquire(9, 1, 2.0).reason, "slots 1 and 2 still count"
    assert_equal :renewed, store.renew(resource: R, owner: 3, token: 1, ttl: 10.0, slot: 2, now: 3.0).status
    store.release(resource: R, owner: 2, token: 1, slot: 1, now: 4.0)
    assert_equal :occupied, acquire(9, 1, 5.0).reason
    assert_equal [0, 2], acquire(9, 1, 13.0).lease.then { [_1.slot, _1.token] }
  end

  def test_a_plain_acquire_or_reacquire_is_refused_while_any_slot_is_live_as_a_limit_of_one_is
    acquire(7, 2, 0.0)
    second = acquire(12, 2, 0.0, ttl: 20.0).lease
    store.release(resource: R, owner: 7, token: 1, slot: 0, now: 1.0) # slot 0 free, slot 1 live
    plain = store.acquire(resource: R, owner: 19, ttl: 10.0, now: 2.0)
    assert_equal [:rejected, :occupied], [plain.status, plain.reason], "more holders than either declared"
    assert_equal :occupied, acquire(19, 1, 2.0).reason
    assert_equal :occupied, store.acquire(resource: R, owner: 12, ttl: 10.0, now: 3.0).reason, "its own slot 1 too"
    assert_equal :occupied, store.reacquire(resource: R, owner: 19, ttl: 10.0, now: 3.0).reason, "nor by a reacquire"
    granted = store.acquire(resource: R, owner: 19, ttl: 10.0, now: second.expires_at).lease
    assert_instance_of LeaseMachines::Lease, granted, "a plain acquire answers a plain lease, in slot 0"
    assert_equal [19, 2], [granted.owner, granted.token]
    assert_equal granted, store.checkpoint(resource: R).lease
    rotated = store.reacquire(resource: R, owner: 19, ttl: 10.0, now: second.expires_at + 1).lease
    assert_equal [LeaseMachines::Lease, 19, 3], [rotated.class, rotated.owner, rotated.token], "its own lease rotated"
  end

  def test_a_limit_of_one_is_the_plain_lease_in_the_same_row
    plain = store.acquire(resource: R, owner: 7, ttl: 10.0, now: 0.0).lease
    assert_equal :occupied, acquire(12, 1, 1.0).reason
    store.release(resource: R, owner: 7, token: plain.token, now: 2.0)
    assert_equal [0, 2], acquire(12, 1, 3.0).lease.then { [_1.slot, _1.token] }
    assert_equal 2, store.checkpoint(resource: R).lease.token, "slot 0 is the resource's row"
    assert_equal :occupied, store.acquire(resource: R, owner: 19, ttl: 10.0, now: 4.0).reason
  end

  def test_limits_and_slots_out_of_range_are_argument_errors
    assert_equal "limit must be from 1 to 1024, got 0", assert_raises(ArgumentError) { acquire(1, 0, 0.0) }.message
    assert_raises(ArgumentError) { acquire(1, 1025, 0.0) }
    error = assert_raises(ArgumentError) { store.renew(resource: R, owner: 1, token: 1, ttl: 1.0, slot: -1) }
    assert_equal "slot must be from 0 to 1023, got -1", error.message
    assert_raises(ArgumentError) { store.fenced(resource: R, token: 1, slot: 1024) { nil } }
    assert_raises(ArgumentError) { store.checkpoint(resource: R, slot: 1024) }
    assert_equal 0, store.revision(resource: R), "nothing was written"
  end

  def test_limits_and_slots_that_are_not_integers_are_type_errors
    ill_typed!
    assert_raises(TypeError) { acquire(1, "2", 0.0) }
    assert_raises(TypeError) { store.release(resource: R, owner: 1, token: 1, slot: 1.0) }
    assert_equal "slot must be an Integer in 0..2**64-1, got Float 1.5",
                 assert_raises(TypeError) { store.checkpoint(resource: R, slot: 1.5) }.message
    assert_equal 0, store.revision(resource: R), "nothing was written"
  end

  # The store against slot rows kept in memory and decided by the same native call: every decision, and every
  # slot's committed row, the same (what the database kept is what it was told to keep, and read back exactly).
  def test_the_same_random_requests_get_the_same_decisions_as_slot_rows_in_memory
    stores = [open_store, open_store]
    memory = Hash.new { |hash, key| hash[key] = [] }
    tokens = Hash.new { |hash, key| hash[key] = [0] }
    random = Random.new(Minitest.seed)
    now = 1_000.0
    iterations(300).times do |step|
      resource = %w[a b].sample(random: random)
      owner = random.rand(1..4)
      slot = random.rand(4)
      token = tokens[resource].sample(random: random) + random.rand(2)
      now += [-1.0, 0.0, 0.5, 2.0].sample(random: random)
      kind, args = case random.rand(3)
                   when 0 then [:acquire, [owner, [0.0, 1.0, 3.0].sample(random: random), random.rand(1..3)]]
                   when 1 then [:renew, [slot, owner, token, 2.0]]
                   else [:release, [slot, owner, token]]
                   end
      rows = memory[resource]
      expected, in_slot, write = LeaseMachines.__send__(:_store_decide_slots, "memory", resource, kind, args, now,
                                                        :clamp, rows, nil)
      rows[in_slot] = write if write
      store = stores[step % 2]
      keywords = { resource: resource, now: now }
      got = case kind
            when :acquire then store.acquire(owner: args[0], ttl: args[1], limit: args[2], **keywords)
            when :renew then store.renew(slot: slot, owner: owner, token: token, ttl: 2.0, **keywords)
            else store.release(slot: slot, owner: owner, token: token, **keywords)
            end
      assert_equal [expected.status, expected.reason], [got.status, got.reason], "step #{step}: #{kind} #{args}"
      if got.lease
        assert_equal [in_slot, expected.lease.to_h], [got.lease.slot, got.lease.to_h.except(:slot)], "step #{step}"
        tokens[resource] << got.lease.token
      end
    end
    memory.each do |resource, rows|
      rows.each_with_index do |row, slot|
        checkpoint, = LeaseMachines.__send__(:_store_checkpoint, "memory", resource, row)
        assert_equal checkpoint, stores.first.checkpoint(resource: resource, slot: slot), "#{resource} slot #{slot}"
      end
    end
  end
end
