# frozen_string_literal: true

# The test of a store set through the gem's own API sets DUMMY_OWN_STORE: the Railtie keeps it.
if ENV["DUMMY_OWN_STORE"]
  LeaseMachines::Jobs.store = -> { LeaseMachines::Store.new(Rails.root.join("db/test.sqlite3").to_s) }
end
