# frozen_string_literal: true
# gc_stress: the extension's objects

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/store_fence_rules"

# The store's fence (test/support/store_fence_rules.rb) on SQLite, PostgreSQL and MySQL; on Redis in
# test/store/redis_test.rb.

# The GC.stress pass is for the extension's objects, which the SQLite class exercises whole: on a server every round
# trip would run under it too, for many minutes.
module SQLiteOnlyUnderGCStress
  def setup
    skip "the GC.stress pass runs the fence's rules on SQLite" if LeaseMachines::TestSupport::GC_STRESS
    super
  end
end

class StoreFenceTest < Minitest::Test
  include StoreFenceRules
  include LeaseMachines::TestSupport::StoreRules::OnSQLite
end

class StoreFencePostgreSQLTest < Minitest::Test
  include StoreFenceRules
  include LeaseMachines::TestSupport::StoreRules::OnPostgreSQL
  include SQLiteOnlyUnderGCStress # after OnPostgreSQL: its setup runs first

  # By design: the statements' rows are pg's, whose values are text unless the application's connection maps types
  # (the store hands back what the driver read, as it does on every store).
  def test_statements_given_up_front_run_with_the_check_and_the_mark
    assert_statements_run_with_the_check_and_the_mark(&:to_s)
  end
end

class StoreFenceMySQLTest < Minitest::Test
  include StoreFenceRules
  include LeaseMachines::TestSupport::StoreRules::OnMySQL
  include SQLiteOnlyUnderGCStress # after OnMySQL: its setup runs first
end
