# frozen_string_literal: true

module LeaseMachines
  module TestSupport
    # What a test module run on both stores shares: the including class says where its database is (#database:
    # a SQLite path or a PostgreSQL URL); #open_store opens a Store on it, closed after the test; #store is the
    # test's first.
    module StoreRules
      def teardown
        (@stores || []).each(&:close)
        super
      end

      def store = @store ||= open_store

      def open_store(**options) = LeaseMachines::Store.new(database, **options).tap { (@stores ||= []) << _1 }
    end
  end
end
