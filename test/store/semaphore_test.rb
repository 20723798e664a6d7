# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/store_semaphore_rules"

class StoreSemaphoreTest < Minitest::Test
  include StoreSemaphoreRules
  include LeaseMachines::TestSupport::StoreRules::OnSQLite
end

class StoreSemaphorePostgreSQLTest < Minitest::Test
  include StoreSemaphoreRules
  include LeaseMachines::TestSupport::StoreRules::OnPostgreSQL

  # Every slot request on a resource locks its slot rows (slot 0's first) in one round trip, and commits in a
  # second: the budget of a single lease.
  def test_a_semaphore_request_is_two_round_trips
    acquire(1, 3, 0.0)
    connection = store.database
    sent = 0
    counting = Module.new do # a simple query, or a pipeline's sync point (prepared statements): one round trip each
      define_method(:send_query) { |*args| (sent += 1) && super(*args) }
      define_method(:pipeline_sync) { |*args| (sent += 1) && super(*args) }
    end
    connection.singleton_class.prepend(counting)
    acquire(2, 3, 1.0)
    store.renew(resource: R, owner: 2, token: 1, ttl: 5.0, slot: 1, now: 2.0)
    assert_equal 4, sent
  end
end

class StoreSemaphoreMySQLTest < Minitest::Test
  include StoreSemaphoreRules
  include LeaseMachines::TestSupport::StoreRules::OnMySQL
end
