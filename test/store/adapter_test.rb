# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# The store contract (LeaseMachines::Store::Adapter): every adapter subclasses Adapter and implements the whole of it
# itself, and Adapter's own methods raise NotImplementedError naming what is missing.
class StoreAdapterTest < Minitest::Test
  def setup
    requires_sqlite3! # lease_machines/store loads with the sqlite3 gem
  end

  # An adapter that implements nothing of the contract.
  Incomplete = Class.new(LeaseMachines::Store::Adapter) if LeaseMachines::TestSupport::SQLITE3

  def adapter = LeaseMachines::Store::Adapter

  def adapters
    store = LeaseMachines::Store
    [store::SQLite, store::PostgreSQL, store::MySQL, store::Redis]
  end

  def test_every_adapter_subclasses_adapter_and_defines_every_required_method_itself
    adapters.each do |klass|
      assert_operator klass, :<, adapter, "#{klass} subclasses Store::Adapter"
      adapter::REQUIRED.each do |method|
        owner = klass.instance_method(method).owner
        refute_equal adapter, owner, "#{klass}##{method} is Adapter's (it raises NotImplementedError)"
      end
      adapter::REQUIRED_CLASS_METHODS.each do |method|
        owner = klass.method(method).owner
        refute_equal adapter.singleton_class, owner, "#{klass}::#{method} is Adapter's (it raises NotImplementedError)"
      end
    end
  end

  def test_adapters_own_methods_raise_not_implemented_error_naming_the_method
    ill_typed! # every method is called with the same made-up arguments
    incomplete = Incomplete
    instance = incomplete.allocate
    said = "StoreAdapterTest::Incomplete does not implement"
    adapter::REQUIRED.each do |method|
      error = assert_raises(NotImplementedError) { instance.public_send(method, 1, two: 2) }
      assert_equal "#{said} ##{method}, which the store contract requires", error.message
    end
    adapter::REQUIRED_CLASS_METHODS.each do |method|
      error = assert_raises(NotImplementedError) { incomplete.public_send(method, 1) }
      assert_equal "#{said} ::#{method}, which the store contract requires", error.message
    end
  end
end
