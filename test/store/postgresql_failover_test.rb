# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# The store on PostgreSQL through a failover to an asynchronous standby that lagged: real servers (a primary and a
# streaming standby made with pg_basebackup), the primary stopped with -m immediate after grants the standby never
# received, the standby promoted (a new timeline), the old primary never started again. The token epoch moves with
# the first grant in the new history, so no token is issued twice and a holder from before is refused as stale.
class StorePostgreSQLFailoverTest < Minitest::Test
  R = "nightly-report"
  EPOCH = 1 << LeaseMachines::TOKEN_EPOCH_BITS

  def setup
    require_postgres!
    require "pg"
    @clusters = []
    @stores = []
  end

  def teardown
    @stores.each(&:close)
    @clusters.each(&:destroy)
    super
  end

  def cluster(name)
    PostgresCluster.new.tap { @clusters << _1 }.then do |made|
      dir = File.join(LeaseMachines::TestSupport::TMP, "pg-#{name}-#{Process.pid}-#{SecureRandom.hex(3)}")
      yield made, dir
    end
  end

  def open_store(url) = LeaseMachines::Store.new(url).tap { @stores << _1 }

  # Waits until +standby+ has replayed every WAL record +primary+ wrote so far (an event, not a timeout).
  def caught_up(standby, primary)
    target = PG.connect(primary.url) { _1.exec("SELECT pg_current_wal_lsn()").getvalue(0, 0) }
    PG.connect(standby.url) do |db|
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
      until db.exec_params("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", [target]).getvalue(0, 0) == "t"
        flunk "the standby never caught up" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        sleep 0.02
      end
    end
  end

  # A primary granting tokens 1 (to A) and, once its standby stopped receiving, 2 (to B, who writes with it); then
  # the primary crashes and the standby is promoted. Returns [the promoted standby's store, B's token].
  def failed_over_after_b
    primary = cluster("primary") { |made, dir| made.start(dir: dir) }
    standby = cluster("standby") { |made, dir| made.start_standby(dir: dir, primary: primary) }
    store = open_store(primary.url)
    store.database.exec("CREATE TABLE report (token bigint)")
    assert_equal 1, store.acquire(resource: R, owner: 1, ttl: 5.0, now: 0.0).lease.token
    caught_up(standby, primary)
    standby.stop(mode: :fast) # stops receiving; it keeps token 1 and A's lease
    b = store.acquire(resource: R, owner: 2, ttl: 30.0, now: 10.0).lease
    assert_equal 2, b.token
    store.fenced(resource: R, token: b.token, now: 11.0) { _1.exec_params("INSERT INTO report VALUES ($1)", [b.token]) }
    store.close
    primary.stop(mode: :immediate) # a crash; it never starts again as a primary
    standby.restart(mode: :fast) # its own WAL only: the primary is gone
    standby.promote
    [open_store(standby.url), b.token]
  end

  def test_a_promoted_standby_that_lagged_issues_above_every_token_and_refuses_the_lost_holder
    store, lost = failed_over_after_b
    assert_equal 1, store.checkpoint(resource: R).last_issued, "the standby never received token 2"
    stale = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: lost, now: 12.0) { flunk } }
    assert_equal :stale_token, stale.reason, "refused as stale before anyone is granted again"
    c = store.acquire(resource: R, owner: 3, ttl: 30.0, now: 13.0).lease
    timeline = store.database.exec("SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)").getvalue(0, 0)
    assert_equal "00000002", timeline, "the promoted standby writes timeline 2"
    assert_equal ((1 << 10) * EPOCH) + 1, c.token, "the first token of timeline 2's epoch, above token 2"
    store.database.exec("CREATE TABLE IF NOT EXISTS report (token bigint)")
    store.fenced(resource: R, token: c.token, now: 14.0) { _1.exec_params("INSERT INTO report VALUES ($1)", [c.token]) }
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: lost, now: 15.0) { flunk } }
    assert_equal :stale_token, error.reason
    assert_equal [[c.token.to_s]], store.database.exec("SELECT token FROM report").values
    assert_equal :renewed, store.renew(resource: R, owner: 3, token: c.token, ttl: 30.0, now: 16.0).status
    epoch = store.database.exec("SELECT epoch FROM lease_machines_history").getvalue(0, 0).to_i
    assert_equal 1 << 10, epoch, "the epoch recorded with the first grant of the new history"
    assert_predicate store.audit, :valid?
  end

  def test_a_database_that_never_failed_over_issues_from_one_in_epoch_zero
    primary = cluster("single") { |made, dir| made.start(dir: dir) }
    store = open_store(primary.url)
    tokens = 3.times.map { |n| store.reacquire(resource: R, owner: 7, ttl: 30.0, now: n.to_f).lease.token }
    assert_equal [1, 2, 3], tokens
    assert_equal [["0"]], store.database.exec("SELECT epoch FROM lease_machines_history").values
    primary.restart # a crash: nothing committed is lost, the history is the same
    store = open_store(primary.url)
    assert_equal 4, store.reacquire(resource: R, owner: 7, ttl: 30.0, now: 4.0).lease.token
  end
end
