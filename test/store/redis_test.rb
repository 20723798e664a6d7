# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/store_authority_rules"
require "support/store_semaphore_rules"
require "support/store_event_log_rules"
require "support/store_contract_rules"
require "support/store_fence_rules"
require "support/store_input_rules"
require "support/redis_support"

# The store on Redis: the same decisions as the in-memory authority, its keys, its commit (a compare-and-set, one round
# trip on a row the store's last commit left, two otherwise; decided again on the answer when the row moved), bad
# input, a server that goes away, its tiers and refusals, WAIT, and the SQL fence that refuses the writes of a Redis
# that lost its tokens.
class StoreRedisTest < Minitest::Test
  include RedisStoreSupport
  include LeaseMachines::TestSupport::StoreAuthorityRules
  R = "nightly-report"

  def setup
    @url = fresh_redis_url
    @fence = File.join(scratch_dir("lease-redis"), "app.sqlite3")
    @stores = []
  end

  def teardown
    @stores.each(&:close)
    super
  end

  def open_store(database = @url, **options) = LeaseMachines::Store.new(database, **options).tap { @stores << _1 }

  # The wait_timeout of a store whose commits are expected to reach their replica: long enough for a loaded machine.
  PATIENT = 30.0

  # A server of this test's own and its replica, returned once the replica is connected and has all of the primary's
  # stream (its link up, and the primary counting it online at its own offset), so that a WAIT decides on the replica
  # and not on how soon it caught up. Flunks after PATIENT seconds.
  def replicated_pair
    primary = own_redis
    replica = own_redis("--replicaof", "127.0.0.1", primary.port.to_s)
    on_primary = redis(primary.url)
    on_replica = redis(replica.url)
    in_sync = eventually(PATIENT) do
      info = on_primary.call("INFO", "replication")
      on_replica.call("INFO", "replication").include?("master_link_status:up") &&
        info.include?("connected_slaves:1") &&
        info.match?(/^slave0:.*\bstate=online,offset=#{info[/^master_repl_offset:(\d+)/, 1]},/)
    end
    assert in_sync, "the replica caught up with the primary within #{PATIENT} s"
    [primary, replica]
  end

  # Worker 7 renews its lease of R (token 1) at t = 1.
  def renew(store) = store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 1.0)

  def test_it_is_the_redis_store_and_names_the_server_without_a_password
    store = open_store
    assert_equal :redis, store.adapter_name
    assert_equal @url.delete_suffix("/0"), store.path
    assert_kind_of RedisClient, store.database
    assert_nil store.clock, "the store's clock is the server's TIME"
    assert_in_delta redis.call("TIME").first.to_f, store.now, 2.0
    secret = own_redis("--requirepass", "hunter2-secret")
    guarded = open_store(secret.url)
    refute_includes guarded.path, "hunter2"
    refute_includes guarded.inspect, "hunter2"
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(secret.url.sub("hunter2", "wrong")) }
    refute_includes error.message, "hunter2"
    refute_includes error.message, "wrong-secret"
  end

  def test_the_same_random_requests_get_the_same_decisions_as_the_authority
    assert_same_decisions_as_the_authority([open_store, open_store(redis)]) # a URL and a client, one history
  end

  def test_the_same_random_requests_get_the_same_decisions_with_a_fence_under_its_first_token_epoch
    assert_same_decisions_as_the_authority([open_store(fence: @fence), open_store(redis, fence: @fence)], steps: 300)
  end

  def test_every_key_of_a_resource_carries_its_whole_name_as_the_hash_tag_and_never_expires
    names = ["a}b{c:d", "a%7Db{c:d", "plain", "x{", "}"]
    store = open_store(fence: @fence)
    names.each { |name| store.acquire(resource: name, owner: 1, ttl: 5.0, limit: 2, now: 1.0) }
    names.each { |name| store.acquire(resource: name, owner: 2, ttl: 5.0, limit: 2, now: 1.0) }
    assert_equal names.sort, store.resources.map(&:resource).uniq, "distinct names, distinct keys"
    assert_equal names.map { 1 }, names.map { store.checkpoint(resource: _1).last_issued }
    keys = redis.call("KEYS", "lease_machines:{*").sort
    assert_includes keys, "lease_machines:{a%7Db%7Bc:d}:lease"
    assert_includes keys, "lease_machines:{a%257Db%7Bc:d}:slots"
    keys.each do |key|
      tag = key[/\{([^}]*)\}/, 1]
      assert_equal key[/\Alease_machines:\{(.*)\}:(lease|slots|events)\z/, 1], tag, "the tag is the whole name"
      assert_equal(-1, redis.call("TTL", key), "#{key} never expires")
    end
    assert_equal [-1, -1], %w[lease_machines:resources lease_machines:event_ids].map { redis.call("TTL", _1) }
  end

  # +client+ (a new one to the test's server by default), its commands (round trips: a pipeline or MULTI is one)
  # counted in sent[0].
  def counted_client(sent, client = redis)
    counting = Module.new do
      %i[call call_v pipelined multi blocking_call].each do |name|
        define_method(name) { |*args, **kwargs, &block| (sent[0] += 1) && super(*args, **kwargs, &block) }
      end
    end
    client.tap { _1.singleton_class.prepend(counting) }
  end

  def test_a_decision_on_a_row_this_store_left_is_one_round_trip_and_two_otherwise
    sent = [0]
    store = open_store(counted_client(sent))
    other = open_store
    store.acquire(resource: R, owner: 7, ttl: 30.0) # sends the scripts (EVALSHA answers NOSCRIPT, then EVAL)
    counts = {}
    round_trips = lambda do |name, &decide|
      sent[0] = 0
      counts[name] = [decide.call, sent[0]]
    end
    # On the server's clock carried from the last answer, one round trip when the commit comes within 2 ms of it; a
    # loaded machine may hold a request longer, and then the commit answers the row and it is two (or more, a command
    # sent again after a timeout): the fewest of up to 20 tries is one. Over a slower link it is always two (below).
    carried = lambda do |name, &decide|
      tries = []
      tries << round_trips.call(name, &decide) until tries.last&.last == 1 || tries.size == 20
      assert_equal 1, tries.map(&:last).min, "#{name}: #{tries}"
    end
    carried.call(:renew) { store.renew(resource: R, owner: 7, token: 1, ttl: 30.0).status }
    carried.call(:refused) { store.acquire(resource: R, owner: 8, ttl: 30.0).reason }
    now = store.now
    round_trips.call(:caller_now) { store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: now).status }
    other.renew(resource: R, owner: 7, token: 1, ttl: 30.0)
    round_trips.call(:after_another_store) { store.renew(resource: R, owner: 7, token: 1, ttl: 30.0).status }
    round_trips.call(:new_resource) { store.acquire(resource: "new", owner: 8, ttl: 30.0).status }
    round_trips.call(:semaphore) { store.acquire(resource: "sem", owner: 8, ttl: 30.0, limit: 3).status }
    assert_equal({ renew: [:renewed, 1], refused: [:occupied, 1], caller_now: [:renewed, 1],
                   after_another_store: [:renewed, 2], new_resource: [:granted, 2], semaphore: [:granted, 2] }, counts,
                 "two where another store moved the row last, or this one never saw it")
    kinds = store.events(resource: R, limit: 1000).map(&:kind)
    assert_equal %i[acquired renewed refused renewed], kinds.chunk_while { _1 == _2 }.map(&:first)
    assert_equal 3, kinds.reverse.take_while { _1 == :renewed }.size, "caller_now, the other store's, and after it"
  end

  # Another writer's commit before each of this store's: every commit is refused (the stamp moved).
  module StampMovedUnderEveryCommit
    attr_accessor :moving

    def commit(keys, args)
      RedisClient.new(url: moving).then { _1.call("HSET", keys[0], "stamp", SecureRandom.hex(8)) && _1.close } if moving
      super
    end
  end

  def test_a_request_that_gave_up_leaves_no_refused_answers_instant_for_a_later_decision
    store = open_store(busy_timeout: 0.0)
    adapter = store.instance_variable_get(:@adapter)
    adapter.singleton_class.prepend(StampMovedUnderEveryCommit)
    adapter.moving = @url
    assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 5, ttl: 10.0) }
    adapter.moving = nil
    sleep 1.0 # the refused answer's TIME is a second old now
    lease = store.reacquire(resource: R, owner: 5, ttl: 0.5).lease
    assert_operator lease.expires_at, :>, store.now, "decided on a fresh reading of TIME, not the old answer's"
  end

  def test_a_clock_carried_too_far_from_the_servers_is_refused_by_the_commit_and_the_decision_is_made_again
    sent = [0]
    store = open_store(counted_client(sent))
    store.acquire(resource: R, owner: 7, ttl: 30.0)
    adapter = store.instance_variable_get(:@adapter) # the last reading of TIME, as if this process had lost 50 ms
    reading, local = adapter.instance_variable_get(:@clock)
    test = self
    claims = [] # the resource's claim after each commit
    recording = Module.new { define_method(:commit) { |*args| super(*args).tap { claims << test.claim } } }
    adapter.singleton_class.prepend(recording)
    [-50_000, 50_000].each do |skew|
      adapter.instance_variable_set(:@clock, [reading + skew, local])
      sent[0] = 0
      before = redis.call("TIME").then { Integer(_1[0]) + Integer(_1[1]) / 1e6 }
      decision = store.renew(resource: R, owner: 7, token: 1, ttl: 30.0)
      after = redis.call("TIME").then { Integer(_1[0]) + Integer(_1[1]) / 1e6 }
      assert_equal [:renewed, 2], [decision.status, sent[0]], "refused (#{skew} µs), then decided on the reply's TIME"
      at = store.events(resource: R).last.at
      assert_operator at, :>=, before - 0.001, "decided at the server's time, not #{skew} µs off it"
      assert_operator at, :<=, after
    end
    assert_equal [[nil, nil]] * 4, claims, "a commit refused for its carried clock alone claims nothing"
  end

  def test_a_row_that_changed_after_the_read_is_decided_again_on_the_new_one
    other = open_store
    calls = 0
    # The store's clock is read between its read and its commit: another store takes the lease there, once.
    racing = open_store(clock: lambda {
      calls += 1
      other.acquire(resource: R, owner: 9, ttl: 30.0, now: 100.0) if calls == 1
      100.0
    })
    decision = racing.acquire(resource: R, owner: 7, ttl: 30.0)
    assert_equal [:rejected, :occupied], [decision.status, decision.reason], "decided on 9's lease, not on nothing"
    assert_equal 2, calls, "decided twice"
    assert_equal 9, other.checkpoint(resource: R).lease.owner
    assert_equal %i[acquired refused], other.events(resource: R).map(&:kind), "the first decision left nothing"
  end

  # The tokens that 4 threads, each with a store of its own on +url+, were granted by +grants+ reacquires each.
  def race(url, grants, **options)
    threads = Array.new(4) do |worker|
      Thread.new do
        store = LeaseMachines::Store.new(url, **options)
        granted = Array.new(grants) { store.reacquire(resource: R, owner: worker, ttl: 0.000001).lease&.token }
        store.close
        granted.compact
      end
    end
    threads.flat_map(&:value)
  end

  def test_stores_racing_on_one_resource_issue_each_token_once
    tokens = race(@url, 40)
    store = open_store
    assert_equal tokens.uniq.size, tokens.size, "no token issued twice"
    assert_equal tokens.max, store.checkpoint(resource: R).last_issued
    assert_predicate store.audit, :valid?
    assert_equal tokens.size, store.events(resource: R, limit: 1000).count(&:change?)
  end

  def test_stores_racing_into_a_new_token_epoch_issue_each_token_once_and_all_above_the_old_ones
    server = own_redis
    open_store(server.url, fence: @fence).reacquire(resource: R, owner: 9, ttl: 30.0, now: 0.0)
    server.restart
    tokens = race(server.url, 20, fence: @fence)
    assert_equal tokens.uniq.size, tokens.size, "no token issued twice"
    assert_operator tokens.min, :>, EPOCH, "every one above epoch 0's"
    epoch = redis(server.url).call("HGET", "lease_machines:token_epoch", "epoch")
    assert_operator tokens.max, :<, (Integer(epoch) + 1) * EPOCH
    committed = open_store(server.url, fence: @fence).database.execute("SELECT epoch FROM lease_machines_token_epochs")
    assert_equal [[Integer(epoch)]], committed, "the fence's database holds the epoch Redis has"
  end

  def test_a_request_that_keeps_losing_the_race_gives_up_after_busy_timeout
    other = open_store
    store = open_store(busy_timeout: 0.05, clock: lambda {
      other.reacquire(resource: R, owner: 9, ttl: 30.0, now: 100.0) # a write between every read and commit
      100.0
    })
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 7, ttl: 30.0) }
    assert_match(/kept changing under the request \(\d+ attempts in 0.05 s, busy_timeout\): nothing was decided/,
                 error.message)
    assert(other.events(resource: R).none? { _1.owner == 7 }, "nothing of 7's was written")
    assert_equal :rejected, open_store.acquire(resource: R, owner: 7, ttl: 30.0, now: 101.0).status, "still usable"
  end

  # The claim of a change's commit that found the resource moved, as KEYS[1] holds it: [claim, claimant].
  def claim = redis.call("HMGET", "lease_machines:{#{R}}:lease", "claim", "claimant")

  # +store+, whose claims last +seconds+ (a loaded machine cannot stretch a step past them).
  def claiming(store, seconds)
    store.tap { _1.instance_variable_get(:@adapter).instance_variable_set(:@claim_us, (seconds * 1_000_000).to_s) }
  end

  def test_a_holders_renewal_that_found_the_row_moved_commits_before_another_stores_refusal
    other = open_store(busy_timeout: 0.0)
    other_refused = nil
    calls = 0
    holder = open_store(clock: lambda {
      calls += 1
      if calls == 3 # the holder's renewal found the row moved by the refusal below, and decides again on the answer
        refute_nil claim.first, "the holder's claim"
        other_refused = assert_raises(LeaseMachines::StoreError) do
          other.acquire(resource: R, owner: 8, ttl: 30.0, now: 101.5)
        end
      end
      100.0 + calls
    })
    claiming(holder, 10.0)
    holder.acquire(resource: R, owner: 7, ttl: 30.0)
    other.acquire(resource: R, owner: 8, ttl: 30.0, now: 101.5) # a refusal moves the stamp the holder's commit left
    assert_equal :renewed, holder.renew(resource: R, owner: 7, token: 1, ttl: 30.0).status
    assert_equal 3, calls, "the renewal's commit found the row moved once, then committed on the answer"
    assert_match(/kept changing under the request/, other_refused.message, "the other store's refusal gave way")
    assert_equal [nil, nil], claim, "the renewal's commit deleted its claim"
    assert_equal :occupied, other.acquire(resource: R, owner: 8, ttl: 30.0, now: 104.0).reason, "then refused again"
    assert_equal %i[acquired refused renewed refused], holder.events(resource: R).map(&:kind)
  end

  def test_a_claimants_own_decision_that_turned_into_a_refusal_commits_and_ends_its_claim
    calls = 0
    holder = claiming(open_store(clock: -> { (calls += 1) == 3 ? 100.0 : 1.0 }), 10.0) # the lease expires at 31
    holder.acquire(resource: R, owner: 7, ttl: 30.0)
    open_store.acquire(resource: R, owner: 8, ttl: 30.0, now: 2.0) # a refusal moves the stamp the holder's commit left
    decision = holder.renew(resource: R, owner: 7, token: 1, ttl: 30.0) # a change found the row moved: its claim
    assert_equal [:rejected, :expired], [decision.status, decision.reason], "decided again on the answer, at 100"
    assert_equal [nil, nil], claim
    assert_equal %i[acquired refused refused], holder.events(resource: R).map(&:kind)
  end

  def test_a_forked_child_claims_under_an_id_of_its_own
    plain_suite_only!("forks")
    adapter = open_store.instance_variable_get(:@adapter)
    parent = adapter.__send__(:claimant)
    reader, writer = IO.pipe
    pid = fork { writer.puts(adapter.__send__(:claimant)) && exit!(0) }
    writer.close
    child = reader.gets&.chomp
    Process.wait(pid)
    refute_equal parent, child, "the child's own refusals must not pass the parent's claims"
    assert_match(/\A\h{16}\z/, child)
    assert_equal parent, adapter.__send__(:claimant), "the parent's stays"
  end

  def test_a_holder_renews_and_releases_while_other_processes_are_refused_without_a_pause
    plain_suite_only!("forks workers")
    holder = open_store
    lease = holder.acquire(resource: R, owner: 7, ttl: 30.0).lease
    stop = File.join(scratch_dir("lease-redis-hot"), "stop")
    workers = Array.new(4) do |index|
      fork do
        store = LeaseMachines::Store.new(@url)
        store.acquire(resource: R, owner: 100 + index, ttl: 30.0) until File.exist?(stop)
        exit!(0)
      rescue StandardError => e
        warn "refused worker: #{e.class}: #{e.message}"
        exit!(1)
      end
    end
    begin
      assert eventually(30) { holder.events(resource: R, limit: 1000).count { _1.kind == :refused } >= 100 }
      statuses = Array.new(5) { holder.renew(resource: R, owner: 7, token: lease.token, ttl: 30.0).status }
      statuses << holder.release(resource: R, owner: 7, token: lease.token).status
    ensure
      File.write(stop, "")
      ended = workers.map { Process.wait2(_1).last }
    end
    assert(ended.all?(&:success?), "every worker ended well")
    assert_equal [*[:renewed] * 5, :released], statuses, "the holder committed among the refusals"
    assert_equal [nil, nil], claim
    assert_predicate holder.audit, :valid?
  end

  def test_the_scripts_are_sent_again_when_the_server_forgot_them
    store = open_store
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    redis.call("SCRIPT", "FLUSH")
    assert_equal :renewed, store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 2.0).status
  end

  def test_bad_options_are_refused_before_anything_is_written
    ill_typed!
    assert_raises(ArgumentError) { LeaseMachines::Store.new(@url, strict: :fsync) }
    assert_raises(TypeError) { LeaseMachines::Store.new(@url, wait: "1") }
    assert_raises(ArgumentError) { LeaseMachines::Store.new(@url, wait: -1) }
    assert_raises(ArgumentError) { LeaseMachines::Store.new(@url, wait_timeout: 0) }
    assert_raises(TypeError) { LeaseMachines::Store.new(@url, fence: 3) }
    assert_raises(ArgumentError) { LeaseMachines::Store.new(@url, fence: @url) }
    assert_raises(TypeError) { LeaseMachines::Store.new(@url, busy_timeout: "1") }
    error = assert_raises(ArgumentError) { LeaseMachines::Store.new(@fence, strict: :aof_always, wait: 1) }
    assert_equal "only a Redis store takes strict:, wait:", error.message
    assert_raises(ArgumentError) { LeaseMachines::Store.new("redis://:pa ss@127.0.0.1:1/0") }.then do |refused|
      refute_includes refused.message, "pa ss"
    end
    assert_empty redis.call("KEYS", "*")
  end

  def test_resources_are_checked_as_every_store_checks_them
    ill_typed!
    store = open_store
    error = assert_raises(TypeError) { store.acquire(resource: :r, owner: 1, ttl: 1.0) }
    assert_match(/\Aresource must be a String/, error.message)
    assert_equal "resource must not be empty", assert_raises(ArgumentError) { store.checkpoint(resource: "") }.message
    assert_raises(ArgumentError) { store.acquire(resource: "x" * 1025, owner: 1, ttl: 1.0) }
    assert_raises(ArgumentError) { store.revision(resource: "\xff".b) }
    assert_raises(RangeError) { store.acquire(resource: R, owner: -1, ttl: 1.0) }
    assert_equal "now must be seconds as a Float or an Integer, got FalseClass false",
                 assert_raises(TypeError) { store.acquire(resource: R, owner: 1, ttl: 1.0, now: false) }.message
    assert_empty redis.call("KEYS", "*")
    assert_equal 0, store.revision(resource: "relevé")
    lease = store.acquire(resource: "relevé", owner: 2**64 - 1, ttl: 5.0, now: 0.0).lease
    assert_equal lease, store.checkpoint(resource: "relevé".b).lease, "the same UTF-8 bytes, the same lease"
  end

  # A redis-client middleware that takes 1.5 ms each way, as a link to another zone would.
  module SlowLink
    def call(command, config) = sleep(0.0015).then { super }.tap { sleep(0.0015) }
    def call_pipelined(commands, config) = sleep(0.0015).then { super }.tap { sleep(0.0015) }
  end

  def test_over_a_link_slower_than_the_carried_clocks_bound_a_decision_is_two_round_trips_and_never_stuck
    sent = [0]
    store = open_store(counted_client(sent, RedisClient.config(url: @url, middlewares: [SlowLink]).new_client),
                       busy_timeout: 1.0)
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    3.times do
      sent[0] = 0
      assert_equal [:renewed, 2], [store.renew(resource: R, owner: 7, token: token, ttl: 30.0).status, sent[0]],
                   "the carried instant refused (over 2 ms old), then decided on the answer, which is not checked"
    end
    assert_equal %i[acquired renewed renewed renewed], store.events(resource: R).map(&:kind)
  end

  def test_a_row_no_history_can_produce_raises_store_error_and_changes_nothing
    store = open_store
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    # A write from outside moves the stamp, or a store that remembers the row does not see it (see the README).
    redis.call("HSET", "lease_machines:{#{R}}:lease", "last_issued", "0", "stamp", "0123456789abcdef")
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 1.0, now: 50.0) }
    assert_match(/corrupt lease row for "nightly-report"/, error.message)
    redis.call("HSET", "lease_machines:{#{R}}:lease", "last_issued", "1", "token", "one")
    assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 1.0, now: 50.0) }
    redis.call("HSET", "lease_machines:{#{R}}:lease", "token", "1", "stamp", "x")
    assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 1.0, now: 50.0) }
    assert_equal 1, store.events(resource: R).size, "nothing was logged"
  end

  def test_a_server_that_goes_away_raises_store_error_and_the_store_works_again_once_it_is_back
    server = own_redis("--requirepass", "s3cret-word")
    store = open_store(server.url)
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    server.stop(signal: "KILL")
    error = assert_raises(LeaseMachines::StoreError) { renew(store) }
    refute_includes error.message, "s3cret"
    assert_kind_of RedisClient::ConnectionError, error.cause
    assert_raises(LeaseMachines::StoreError) { store.checkpoint(resource: R) }
    assert_raises(LeaseMachines::StoreError) { store.events }
    server.start # no persistence: everything it had is gone
    assert_equal 1, store.acquire(resource: R, owner: 9, ttl: 30.0, now: 2.0).lease.token, "a reset counter"
  end

  def test_a_commit_whose_answer_was_lost_raises_store_error_saying_the_outcome_is_unknown
    client = redis
    store = open_store(client)
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    losing = Module.new do # the commit (call_v, the store's one use of it) applied, and its answer too late
      define_method(:call_v) do |command|
        super(command)
        raise RedisClient::ReadTimeoutError, "Waited 5.0 seconds"
      end
    end
    client.singleton_class.prepend(losing)
    error = assert_raises(LeaseMachines::StoreError) { renew(store) }
    assert_match(/while the commit was on its way .*: whether it committed is unknown/, error.message)
    assert_equal 2, open_store.revision(resource: R), "it did commit; the next request reads what the server kept"
  end

  def test_a_commit_whose_connection_broke_is_sent_once_more_and_never_applied_twice
    client = redis
    store = open_store(client)
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    breaks = 0
    breaking = Module.new do # the next +breaks+ commits (call_v): sent, applied, and their answers lost
      define_method(:call_v) do |command|
        answer = super(command)
        if breaks.positive?
          breaks -= 1
          close
          raise RedisClient::ConnectionError, "Connection reset by peer"
        end
        answer
      end
    end
    client.singleton_class.prepend(breaking)
    breaks = 1
    assert_equal :renewed, renew(store).status, "the second attempt found the first's stamp: committed once"
    assert_equal %i[acquired renewed], store.events(resource: R).map(&:kind)
    breaks = 2
    error = assert_raises(LeaseMachines::StoreError) { renew(store) }
    assert_match(/whether it committed is unknown/, error.message)
    assert_equal 3, store.revision(resource: R), "the first attempt committed; the second found it and broke too"
    assert_equal :renewed, renew(store).status
    assert_equal %i[acquired renewed renewed renewed], store.events(resource: R).map(&:kind)
  end

  # A redis-client middleware that loses the answer of the next commit it sends (the script applied), once.
  module LosesOneCommitAnswer
    class << self
      attr_accessor :armed
    end

    def call(command, config) = lose_once(command) { super }
    def call_pipelined(commands, config) = lose_once(commands.first) { super }

    def lose_once(command)
      answer = yield
      return answer unless LosesOneCommitAnswer.armed && %w[EVALSHA EVAL].include?(command.first.to_s)

      LosesOneCommitAnswer.armed = false
      raise RedisClient::ConnectionError, "Connection reset by peer"
    end
  end

  def test_a_commit_a_clients_own_reconnect_sent_again_is_answered_as_the_first_attempt_that_committed
    client = RedisClient.config(url: @url, reconnect_attempts: 1, middlewares: [LosesOneCommitAnswer]).new_client
    store = open_store(client)
    assert_equal 1, store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    store.release(resource: R, owner: 7, token: 1)
    LosesOneCommitAnswer.armed = true
    decision = store.acquire(resource: R, owner: 7, ttl: 30.0)
    assert_equal [:granted, 2], [decision.status, decision.lease.token], "the first attempt's grant, not :occupied"
    assert_equal %i[acquired released acquired], store.events(resource: R).map(&:kind), "applied once"
  end

  def test_with_wait_a_commit_found_committed_by_its_second_attempt_says_its_replication_is_not_known
    primary, replica = replicated_pair
    client = RedisClient.config(url: primary.url, middlewares: [LosesOneCommitAnswer]).new_client
    store = open_store(client, wait: 1, wait_timeout: PATIENT)
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    LosesOneCommitAnswer.armed = true
    error = assert_raises(LeaseMachines::StoreError) { renew(store) }
    assert_match(/committed on the primary, but its replicas' acknowledgement is not known/, error.message)
    assert_equal 2, store.revision(resource: R), "renewed once, on the primary"
    assert_equal :renewed, store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 2.0).status
    replica.destroy
  end

  def test_the_tier_is_read_on_connect_and_strict_refuses_a_server_below_it
    always = own_redis("--appendonly", "yes", "--appendfsync", "always")
    durable = open_store(always.url, strict: :aof_always)
    assert_equal [:aof_always, 0, 0], durable.durability.then { [_1.tier, _1.replicas, _1.wait] }
    assert_equal "appendfsync always: every decision is on disk before it is answered", durable.durability.promise
    assert_predicate durable.durability, :frozen?
    redis(always.url).call("CONFIG", "SET", "appendfsync", "no")
    assert_equal :aof_no, open_store(always.url).durability.tier
    redis(always.url).call("CONFIG", "SET", "appendfsync", "everysec")
    assert_equal :aof_everysec, open_store(always.url, strict: :aof_everysec).durability.tier
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(always.url, strict: :aof_always) }
    assert_match(/promises :aof_everysec .*, below strict: :aof_always/, error.message)
    memory = open_store
    assert_equal :memory, memory.durability.tier
    assert_match(/a restart loses every grant/, memory.durability.promise)
    assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(@url, strict: :aof_no) }
    assert_nil LeaseMachines::Store.new(@fence).tap(&:close).durability, "SQL stores have no tiers"
  end

  def test_a_server_that_may_evict_keys_is_refused
    redis.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(@url) }
    assert_match(/maxmemory-policy is allkeys-lru: .* set maxmemory-policy noeviction/, error.message)
  ensure
    redis.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
  end

  def test_wait_asks_the_replicas_and_a_replica_that_is_gone_raises_store_error_with_the_decision_on_the_primary
    primary, replica = replicated_pair
    refused = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(replica.url) }
    assert_match(/it is a replica/, refused.message)
    assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(primary.url, wait: 2) }
    store = open_store(primary.url, wait: 1, wait_timeout: PATIENT)
    assert_equal [1, 1], store.durability.then { [_1.replicas, _1.wait] }
    assert_match(/each commit reached 1 of its 1 replicas \(WAIT\)/, store.durability.promise)
    assert_equal 1, store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0).lease.token
    impatient = open_store(primary.url, wait: 1, wait_timeout: 0.2) # opened while the replica is connected
    replica.stop(signal: "KILL")
    error = assert_raises(LeaseMachines::StoreError) { renew(impatient) }
    assert_match(/committed on the primary, but only 0 of 1 replicas acknowledged it within 200 ms/, error.message)
    assert_equal 2, store.revision(resource: R), "the renewal is on the primary"
  end

  def test_fenced_without_a_fence_says_where_the_fence_goes
    store = open_store
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    error = assert_raises(NotImplementedError) { store.fenced(resource: R, token: token) { flunk "must not run" } }
    assert_match(/fenced needs a fence in your SQL database/, error.message)
    assert_nil store.fence_highest(resource: R)
    assert_equal :renewed, store.renew(resource: R, owner: 7, token: token, ttl: 30.0).status, "still usable"
  end

  def test_fenced_writes_land_in_the_fences_database_under_the_redis_lease
    store = open_store(fence: @fence)
    assert_kind_of SQLite3::Database, store.database, "the application's tables are in the fence's database"
    store.database.execute("CREATE TABLE report (token INTEGER)")
    token = store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0).lease.token
    store.fenced(resource: R, token: token, now: 1.0) { |db| db.execute("INSERT INTO report VALUES (?)", [token]) }
    assert_equal token, store.fence_highest(resource: R)
    assert_equal token, store.resources.first.highest
    store.acquire(resource: R, owner: 8, ttl: 30.0, now: 31.0)
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: token, now: 32.0) { flunk } }
    assert_equal :stale_token, error.reason
    assert_equal [[1]], store.database.execute("SELECT token FROM report")
    assert_equal %i[write_accepted write_refused], LeaseMachines::Store.new(@fence).tap { @stores << _1 }
                                                                           .events(resource: R).map(&:kind)
  end

  EPOCH = 1 << 40 # each token epoch's floor is its number times this

  # The fenced write of the tests below: +token+ into the application's table, on the fence's connection +db+.
  def report(db, token) = db.execute("INSERT INTO report VALUES (?)", [token])

  # A store on +server+ with the SQLite fence and its application table, where worker 7 took tokens 1, 2 and 3.
  def sevens_store(server)
    store = open_store(server.url, fence: @fence)
    store.database.execute("CREATE TABLE report (token INTEGER)")
    3.times { |n| store.reacquire(resource: R, owner: 7, ttl: 30.0, now: n.to_f) }
    store
  end

  def test_the_first_token_epoch_is_zero_committed_in_the_fence_before_redis_and_set_in_this_servers_history
    store = open_store(fence: @fence)
    assert_equal 1, store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0).lease.token
    assert_equal [[1, 0]], store.database.execute("SELECT id, epoch FROM lease_machines_token_epochs")
    assert_equal({ "epoch" => "0", "history" => history(redis) }, redis.call("HGETALL", "lease_machines:token_epoch"))
    assert_equal 2, store.reacquire(resource: R, owner: 7, ttl: 30.0, now: 1.0).lease.token
    assert_equal :renewed, store.renew(resource: R, owner: 7, token: 2, ttl: 30.0, now: 2.0).status
  end

  # The server's history as a token epoch names it: its process (run_id) and its replication history (master_replid).
  def history(client) = [client.call("INFO", "server")[/^run_id:(\h+)/, 1],
                         client.call("INFO", "replication")[/^master_replid:(\h+)/, 1]].join(":")

  # Waits until +replica+ has every write +primary+ took so far (an event, not a timeout a loaded machine can miss).
  def synced(replica, primary)
    offset = ->(server, field) { redis(server.url).call("INFO", "replication")[/^#{field}:(\d+)/, 1].to_i }
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
    until redis(replica.url).call("INFO", "replication").include?("master_link_status:up") &&
          offset.call(replica, "slave_repl_offset") >= offset.call(primary, "master_repl_offset")
      flunk "the replica never caught up" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.02
    end
  end

  # A primary and its replica; A granted token 1 on the primary, the replica synced, then cut off (REPLICAOF NO ONE):
  # it keeps token 1 and A's lease. Then the primary grants B token 2, which the replica never sees.
  # Returns [primary, replica, the primary's store, B's lease].
  def replica_cut_off_before_b
    primary = own_redis
    replica = own_redis("--replicaof", "127.0.0.1", primary.port.to_s)
    store = open_store(primary.url, fence: @fence)
    store.database.execute("CREATE TABLE report (token INTEGER)")
    assert_equal 1, store.acquire(resource: R, owner: 1, ttl: 5.0, now: 0.0).lease.token
    synced(replica, primary)
    redis(replica.url).call("REPLICAOF", "NO", "ONE")
    b = store.acquire(resource: R, owner: 2, ttl: 30.0, now: 10.0).lease
    assert_equal 2, b.token
    [primary, replica, store, b]
  end

  # The failback that names a process, not a history: the primary takes the cut-off replica's data (which never saw
  # token 2) and is promoted again, the same process all along.
  def test_a_failback_to_the_same_server_process_moves_the_token_epoch_and_the_holder_it_lost_is_refused
    primary, replica, store, b = replica_cut_off_before_b
    store.fenced(resource: R, token: b.token, now: 11.0) { report(_1, b.token) }
    redis(primary.url).call("REPLICAOF", "127.0.0.1", replica.port.to_s) # its data replaced by the replica's
    synced(primary, replica)
    redis(primary.url).call("REPLICAOF", "NO", "ONE") # promoted again: the same run_id, another master_replid
    stale = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: b.token, now: 12.0) { flunk } }
    assert_equal :stale_token, stale.reason, "refused as stale before anyone is granted again"
    c = store.acquire(resource: R, owner: 3, ttl: 30.0, now: 13.0).lease
    assert_equal EPOCH + 1, c.token, "issued in epoch 1, above token 2, which the server forgot"
    store.fenced(resource: R, token: c.token, now: 14.0) { report(_1, c.token) }
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: b.token, now: 15.0) { flunk } }
    assert_equal :stale_token, error.reason
    assert_equal [[b.token], [c.token]], store.database.execute("SELECT token FROM report")
  end

  # A failover: the cut-off replica is promoted, the old primary dies, and the clients move to the replica.
  def test_a_failover_to_a_replica_that_lagged_moves_the_token_epoch_and_the_old_primarys_holder_is_refused
    primary, replica, _old, b = replica_cut_off_before_b
    primary.stop(signal: "KILL")
    store = open_store(replica.url, fence: @fence)
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: b.token, now: 11.0) { flunk } }
    assert_equal :stale_token, error.reason, "the promoted replica never heard of token 2; its holder is stale"
    c = store.acquire(resource: R, owner: 3, ttl: 30.0, now: 12.0).lease
    assert_equal EPOCH + 1, c.token
    assert_equal [[1]], store.database.execute("SELECT epoch FROM lease_machines_token_epochs")
  end

  # Redis's epoch record survived (a copy of its data), but the fence's database committed a later epoch since.
  def test_an_epoch_behind_the_fences_database_is_moved_past_it
    store = open_store(fence: @fence)
    store.acquire(resource: R, owner: 1, ttl: 30.0, now: 0.0)
    store.database.execute("UPDATE lease_machines_token_epochs SET epoch = 4")
    other = open_store(fence: @fence) # a store that meets epoch 0 for the first time
    assert_equal 5 * EPOCH + 1, other.acquire(resource: "other", owner: 2, ttl: 30.0, now: 1.0).lease.token
    assert_equal "5", redis.call("HGET", "lease_machines:token_epoch", "epoch")
  end

  def test_a_restart_without_persistence_moves_the_token_epoch_and_the_old_holder_is_refused_as_stale
    server = own_redis
    store = sevens_store(server)
    store.fenced(resource: R, token: 3, now: 3.0) { report(_1, 3) }
    server.restart # a crash: nothing was persisted, the epoch with the rest
    fresh = store.acquire(resource: R, owner: 9, ttl: 30.0, now: 4.0).lease
    assert_equal EPOCH + 1, fresh.token, "issued under epoch 1, above every token of epoch 0"
    assert_equal [[1]], store.database.execute("SELECT epoch FROM lease_machines_token_epochs")
    store.fenced(resource: R, token: fresh.token, now: 5.0) { report(_1, fresh.token) }
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 3, now: 6.0) { flunk } }
    assert_equal :stale_token, error.reason
    assert_equal [[3], [EPOCH + 1]], store.database.execute("SELECT token FROM report")
    assert_predicate store.audit, :valid?
  end

  # A replica that lagged, promoted: here, a server started again from an older snapshot of the same data. Its
  # epoch is the old one, set on another server process; its counters are behind tokens that holders still carry.
  def test_a_row_a_refusal_left_before_the_new_epoch_issues_above_its_floor_and_its_old_holder_is_refused
    server = own_redis
    store = sevens_store(server) # tokens 1 to 3 under epoch 0
    store.fenced(resource: R, token: 3, now: 3.0) { report(_1, 3) }
    server.restart # nothing persisted
    refused = store.renew(resource: R, owner: 7, token: 3, ttl: 30.0, now: 4.0) # a row with no token, no epoch yet
    assert_equal [:rejected, :not_held], [refused.status, refused.reason]
    assert_equal EPOCH + 1, store.acquire(resource: "other", owner: 9, ttl: 30.0, now: 4.0).lease.token, "epoch 1"
    fresh = open_store(server.url, fence: @fence).acquire(resource: R, owner: 9, ttl: 30.0, now: 5.0).lease
    assert_equal EPOCH + 1, fresh.token, "above every token of epoch 0, though R's row was written before epoch 1"
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 3, now: 6.0) { flunk } }
    assert_equal :stale_token, error.reason
  end

  def test_a_server_behind_its_holders_never_issues_a_token_they_carry_and_their_writes_are_refused
    server = own_redis
    store = sevens_store(server)
    server.client.then { |client| client.call("SAVE") && client.close } # the replica's copy: tokens up to 3
    2.times { |n| store.reacquire(resource: R, owner: 7, ttl: 30.0, now: 3.0 + n) } # 4 and 5: lost below
    store.fenced(resource: R, token: 5, now: 5.0) { report(_1, 5) }
    store.reacquire(resource: R, owner: 7, ttl: 30.0, now: 6.0) # 6: 7 holds it and has not written with it yet
    server.restart # started again from the snapshot: 7's token 3, live until 32, is all it knows
    assert_equal 3, store.checkpoint(resource: R).lease.token
    assert_equal :occupied, store.acquire(resource: R, owner: 9, ttl: 30.0, now: 10.0).reason
    tokens = (0...6).map { |n| store.reacquire(resource: R, owner: 9, ttl: 30.0, now: 40.0 + n).lease.token }
    assert_equal (1..6).map { EPOCH + _1 }, tokens, "never 4, 5 or 6 again"
    store.fenced(resource: R, token: tokens.last, now: 47.0) { report(_1, tokens.last) }
    [6, 5].each do |old|
      error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: old, now: 48.0) { flunk } }
      assert_equal :stale_token, error.reason
    end
    assert_equal [[5], [EPOCH + 6]], store.database.execute("SELECT token FROM report")
  end

  def test_a_new_epoch_is_taken_outside_any_transaction_of_the_fences_database
    server = own_redis
    store = open_store(server.url, fence: @fence)
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    server.restart
    error = assert_raises(LeaseMachines::StoreError) do
      store.database.transaction { store.acquire(resource: "other", owner: 9, ttl: 30.0, now: 1.0) }
    end
    assert_match(/a decision cannot commit inside an open transaction/, error.message)
    assert_nil store.checkpoint(resource: "other").lease
    assert_equal [[0]], store.database.execute("SELECT epoch FROM lease_machines_token_epochs"), "no epoch taken"
    assert_equal EPOCH + 1, store.acquire(resource: "other", owner: 9, ttl: 30.0, now: 1.0).lease.token
    assert_equal :renewed, store.renew(resource: "other", owner: 9, token: EPOCH + 1, ttl: 30.0, now: 2.0).status
  end

  def test_without_a_fence_a_restart_without_persistence_issues_the_tokens_again_until_a_fenced_store_moves_the_epoch
    server = own_redis
    fenced = open_store(server.url, fence: @fence)
    store = open_store(server.url)
    3.times { |n| fenced.reacquire(resource: R, owner: 7, ttl: 30.0, now: n.to_f) } # epoch 0
    server.restart
    assert_equal 1, store.acquire(resource: R, owner: 9, ttl: 30.0, now: 4.0).lease.token, "issued again"
    assert_equal :memory, store.durability.tier
    assert_equal EPOCH + 1, fenced.reacquire(resource: R, owner: 9, ttl: 30.0, now: 5.0).lease.token, "epoch 1"
    assert_equal EPOCH + 1, store.acquire(resource: "other", owner: 9, ttl: 30.0, now: 6.0).lease.token,
                 "a store without the fence issues above the epoch's floor too"
  end

  def test_a_restart_of_a_server_with_aof_always_keeps_every_token
    server = own_redis("--appendonly", "yes", "--appendfsync", "always")
    store = open_store(server.url, strict: :aof_always)
    3.times { |n| store.reacquire(resource: R, owner: 7, ttl: 30.0, now: n.to_f) }
    server.restart
    assert_equal 4, store.reacquire(resource: R, owner: 7, ttl: 30.0, now: 5.0).lease.token
    assert_predicate store.audit, :valid?
  end

  def test_a_restart_of_a_server_with_aof_always_loses_no_holder_and_moves_the_token_epoch_once
    server = own_redis("--appendonly", "yes", "--appendfsync", "always")
    store = sevens_store(server)
    store.fenced(resource: R, token: 3, now: 3.0) { report(_1, 3) }
    server.restart
    assert_equal :renewed, store.renew(resource: R, owner: 7, token: 3, ttl: 30.0, now: 4.0).status, "kept"
    store.fenced(resource: R, token: 3, now: 5.0) { report(_1, 3) }
    assert_equal :occupied, store.acquire(resource: R, owner: 9, ttl: 30.0, now: 6.0).reason
    tokens = (7..8).map { store.reacquire(resource: R, owner: 7, ttl: 30.0, now: _1).lease.token }
    assert_equal [EPOCH + 1, EPOCH + 2], tokens
    assert_equal [[3], [3]], store.database.execute("SELECT token FROM report")
    assert_predicate store.audit, :valid?
  end

  def test_a_name_with_a_nul_byte_is_kept_without_a_fence_and_with_an_sqlite_one
    plain = open_store
    fenced = open_store(fence: @fence)
    token = granted(plain.acquire(resource: "a\0b", owner: 7, ttl: 30.0, now: 0.0)).token
    assert_equal :occupied, fenced.acquire(resource: "a\0b", owner: 8, ttl: 30.0, now: 1.0).reason
    granted(fenced.acquire(resource: "a\0c", owner: 8, ttl: 30.0, now: 1.0))
    assert_equal :ok, fenced.fenced(resource: "a\0b", token: token, now: 2.0) { :ok }
    assert_equal [token, nil], [fenced.fence_highest(resource: "a\0b"), fenced.fence_highest(resource: "a")]
    assert_equal ["a\0b", "a\0c"], plain.resources.map(&:resource)
  end

  def test_a_postgresql_fence_refuses_a_name_with_a_nul_byte_at_acquire_as_the_postgresql_store_does
    url = fresh_postgres_schema_url
    token = granted(open_store.acquire(resource: "a\0b", owner: 7, ttl: 30.0, now: 0.0)).token # granted unfenced
    store = open_store(fence: url)
    message = "resource \"x\\u0000y\" contains a NUL byte, which PostgreSQL's text cannot hold"
    error = assert_raises(ArgumentError) { store.acquire(resource: "x\0y", owner: 7, ttl: 30.0, now: 1.0) }
    assert_equal message, error.message
    assert_equal message, assert_raises(ArgumentError) { store.checkpoint(resource: "x\0y") }.message
    assert_equal 0, redis.call("EXISTS", LeaseMachines::Store::Redis.key("x\0y", "lease")), "nothing written in Redis"
    error = assert_raises(ArgumentError) { store.fenced(resource: "a\0b", token: token, now: 2.0) { flunk } }
    assert_equal message.sub("x\\u0000y", "a\\u0000b"), error.message
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0, now: 3.0))
    assert_equal :ok, store.fenced(resource: R, token: lease.token, now: 4.0) { :ok }
  end

  def test_a_postgresql_fence_serializes_the_fenced_writes_of_a_resource
    url = fresh_postgres_schema_url
    store = open_store(fence: url, busy_timeout: 0.3)
    assert_match(/\(its fence: postgresql:/, store.path)
    store.database.exec("CREATE TABLE report (token bigint)")
    token = store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0).lease.token
    store.fenced(resource: R, token: token, now: 1.0) { |db| db.exec_params("INSERT INTO report VALUES ($1)", [token]) }
    assert_equal token, store.fence_highest(resource: R)
    holder = PG.connect(url)
    holder.exec("BEGIN")
    holder.exec_params("SELECT pg_advisory_xact_lock(731120172, hashtext($1))", [R]) # another fenced write's lock
    error = assert_raises(LeaseMachines::StoreError) { store.fenced(resource: R, token: token, now: 2.0) { flunk } }
    assert_match(/lock timeout/, error.message)
    holder.exec("ROLLBACK")
    assert_equal :ok, store.fenced(resource: R, token: token, now: 2.0) { :ok }
  ensure
    holder&.close
  end

  def test_a_missing_redis_client_gem_is_named
    error = assert_raises(LoadError) do
      LeaseMachines::Store::Redis.load_client("lease_machines_no_such_gem", "redis://:pw@127.0.0.1:1/0")
    end
    assert_equal "the Redis lease store needs the redis-client gem (add it to your Gemfile), for redis://127.0.0.1:1",
                 error.message
  end
end

# What the rules modules shared with the SQL stores need on Redis: the shared server, and an SQLite fence for their
# fenced writes.
module RedisStoreRules
  include RedisStoreSupport
  include LeaseMachines::TestSupport::StoreRules::SQLiteStatements

  def setup
    super
    @url = fresh_redis_url
    @fence = File.join(scratch_dir("lease-redis-rules"), "app.sqlite3")
  end

  def database = @url

  def open_store(**options) = super(fence: @fence, **options)
end

# The store's requests on Redis (test/support/store_contract_rules.rb), its fenced writes in an SQLite fence.
class StoreContractRedisTest < Minitest::Test
  include StoreContractRules
  include RedisStoreRules
end

class StoreTransactionRedisTest < Minitest::Test
  include StoreTransactionRules
  include RedisStoreRules
end

# The fence on Redis (test/support/store_fence_rules.rb): the fence's database is SQLite.
class StoreFenceRedisTest < Minitest::Test
  include StoreFenceRules
  include RedisStoreRules
end

# Bad input on Redis (test/support/store_input_rules.rb): the same classes and messages as the SQL stores'.
class StoreInputsRedisTest < Minitest::Test
  include StoreInputRules
  include RedisStoreRules
end

# Semaphores on Redis: the slot rules' tests (test/support/store_semaphore_rules.rb).
class StoreSemaphoreRedisTest < Minitest::Test
  include StoreSemaphoreRules
  include RedisStoreRules
end

# The event log on Redis: the log's tests (test/support/store_event_log_rules.rb), but where Redis's differs: the
# fenced writes' events are in the fence's database, retention is per resource, and the log is tampered with in its
# streams.
class StoreEventLogRedisTest < Minitest::Test
  include StoreEventLogRules
  include RedisStoreRules

  def fence_log = @fence_log ||= LeaseMachines::Store.new(@fence).tap { (@stores ||= []) << _1 }

  def test_each_request_logs_one_event_in_its_transaction_and_the_log_tells_worker_sevens_night
    worker_sevens_night
    events = store.events(resource: R)
    assert_equal %i[acquired renewed refused acquired released], events.map(&:kind)
    assert_equal [0.0, 5.0, 8.0, 16.0, 19.0], events.map(&:at)
    assert events[3].takeover?
    assert_equal LeaseMachines::Lease.new(owner: 7, token: 1, expires_at: 15.0), events[3].replaced
    assert_equal [9, nil, :occupied], events[2].then { [_1.owner, _1.token, _1.reason] }
    writes = fence_log.events(resource: R)
    assert_equal [[:write_accepted, 1, 1.0], [:write_accepted, 2, 17.0], [:write_refused, 1, 18.0]],
                 writes.map { [_1.kind, _1.token, _1.at] }
    assert_equal [:stale_token, 2], writes.last.then { [_1.reason, _1.highest] }
  end

  def test_a_store_history_passes_the_audit_and_a_tampered_one_does_not
    worker_sevens_night
    store.acquire(resource: "other", owner: 3, ttl: 5.0, now: 2.0)
    assert store.audit.valid?, store.audit.findings.inspect
    assert_equal 5, store.audit.checked_events
    renewed = store.events(resource: R).find { _1.kind == :renewed }
    rewrite_stream(R) { |id, fields| id == "#{renewed.id}-0" ? fields.merge("expires_at" => "1.0") : fields }
    report = store.audit
    refute report.valid?
    assert_equal [[:renewal_shortened, R, renewed.id]], report.findings.map { [_1.code, _1.resource, _1.event_index] }
  end

  # Per resource: its stream keeps its newest keep_events events (its slots' too), and each of its requests deletes
  # its two oldest when older than events_max_age before it (SQL keeps keep_events per lease, and prunes the log's).
  def test_retention_keeps_the_newest_events_of_each_lease_in_constant_work
    kept = open_store(keep_events: 3, events_max_age: 10.0)
    [7, 8].each_with_index { |owner, at| kept.acquire(resource: R, owner: owner, ttl: 10.0, limit: 2, now: at.to_f) }
    [2.0, 3.0].each { |at| kept.renew(resource: R, owner: 7, token: 1, ttl: 10.0, slot: 0, now: at) }
    assert_equal [[1.0, 1], [2.0, 0], [3.0, 0]], kept.events(resource: R).map { [_1.at, _1.slot] }
    kept.acquire(resource: "b", owner: 2, ttl: 10.0, now: 100.0)
    assert_equal [1.0, 2.0, 3.0], kept.events(resource: R).map(&:at), "another resource's request prunes its own"
    kept.acquire(resource: R, owner: 9, ttl: 10.0, now: 105.0)
    assert_equal [105.0], kept.events(resource: R).map(&:at), "the newest 3, then the two oldest of them, too old"
  end

  def test_events_page_by_key_and_check_their_arguments
    worker_sevens_night
    first = store.events(limit: 3)
    assert_equal store.events.map(&:id), (first + store.events(after: first.last.id)).map(&:id)
    assert_equal store.events.last(2), store.latest_events(limit: 2)
    assert_equal store.events(resource: R).last(3), store.latest_events(resource: R, limit: 3)
    assert_raises(ArgumentError) { store.events(limit: 1001) }
    assert_equal({ acquired: 2, renewed: 1, released: 1, refused: 1 },
                 store.event_counts.select { |_, count| count.positive? })
  end

  def test_revoke_ends_the_live_lease_whoever_holds_it_and_fences_its_token
    store.acquire(resource: R, owner: 7, ttl: 10.0, now: 0.0)
    answers = [store.revoke(resource: R, now: 1.0).status,
               assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 1, now: 2.0) { flunk } }.reason,
               store.acquire(resource: R, owner: 9, ttl: 10.0, now: 3.0).lease.token,
               store.revoke(resource: R, token: 1, now: 4.0).reason, store.revoke(resource: "never", now: 5.0).reason]
    assert_equal [:released, :not_held, 2, :stale_token, :not_held], answers
    assert_equal %i[acquired revoked acquired refused], store.events(resource: R).map(&:kind)
    assert_equal %i[write_refused], fence_log.events(resource: R).map(&:kind), "the fenced write's, in the fence's log"
    assert store.audit.valid?
  end

  # Rewrites the stream of +resource+ with each entry's fields as the block returns them (ids kept): a hand edit.
  def rewrite_stream(resource)
    client = redis
    key = "lease_machines:{#{resource}}:events"
    entries = client.call("XRANGE", key, "-", "+")
    client.call("DEL", key)
    entries.each do |id, fields|
      client.call("XADD", key, id, *yield(id, fields.each_slice(2).to_h).flatten)
    end
  end
end
