# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/store_event_log_rules"

class StoreEventLogTest < Minitest::Test
  include StoreEventLogRules
  include LeaseMachines::TestSupport::StoreRules::OnSQLite

  def tamper(sql) = store.database.execute(sql)
end

class StoreEventLogPostgreSQLTest < Minitest::Test
  include StoreEventLogRules
  include LeaseMachines::TestSupport::StoreRules::OnPostgreSQL

  def tamper(sql) = store.database.exec(sql)

  # A holder frozen between a decision's two round trips (SIGSTOP, a paused VM) holds the resource's row lock: the
  # server ends its session after the idle limit, and another process's request goes through.
  def test_a_holder_frozen_inside_a_decision_is_cut_off_by_the_server
    open_store.acquire(resource: R, owner: 7, ttl: 10.0)
    # A store that has not decided on R reads its row first (one it knew would be decided on in one round trip).
    adapter = open_store.instance_variable_get(:@adapter)
    adapter.open_request(R, clock: true) # the first round trip: the row locked; the second never comes
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    other = open_store(busy_timeout: 10.0)
    decision = other.acquire(resource: R, owner: 9, ttl: 10.0)
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_equal [:rejected, :occupied], [decision.status, decision.reason], "7's committed lease still stands"
    assert_operator waited, :<, 6.0, "the lock was freed by the server's idle limit (2 s), not held"
    assert_operator waited, :>=, 1.5
    assert_raises(LeaseMachines::StoreError) { adapter.close_request(R, nil, ["refused", 0.0] + [nil] * 8) }
  end
end

class StoreEventLogMySQLTest < Minitest::Test
  include StoreEventLogRules
  include LeaseMachines::TestSupport::StoreRules::OnMySQL

  def tamper(sql) = store.database.query(sql)
end
