# frozen_string_literal: true

module LeaseMachines
  class Web
    # What a dashboard serves with, checked option by option (each setter raises TypeError or ArgumentError for a
    # value it cannot use, whatever the value, a BasicObject too):
    #
    # - +store+: a LeaseMachines::Store (one connection: the dashboard's requests take it one at a time, behind a
    #   Mutex), or a factory (anything with +call+ that opens one: each server thread opens its own). nil, only in the
    #   class-level configuration: the Rails application's lease store (see Web.default_store). LeaseMachines::Jobs.pool
    #   is taken too: the jobs' own stores, one request at a time.
    # - +actions+: true to offer the one action, revoking a live lease (POST /revoke); false (the default) serves
    #   read-only and renders no button.
    # - +authorize+: nil, or anything with +call+, given the Rack::Request of every request (pages and actions): a
    #   falsy answer refuses it with 403. Actions need one.
    # - +expiring_within+: Float seconds (0 to 1e9; an Integer is converted): a live lease with less time than this
    #   left is shown as expiring. Default 5.0.
    # - +poll_every+: Float seconds (0.1 to 86400): how often the pages ask the server for fresh rows. Default 2.0.
    class Configuration
      # The ranges of the two durations, Float seconds.
      EXPIRING_WITHIN = (0.0..1e9)
      POLL_EVERY = (0.1..86_400.0)

      attr_reader :store, :actions, :authorize, :expiring_within, :poll_every

      def initialize
        @store = nil
        @actions = false
        @authorize = nil
        @expiring_within = 5.0
        @poll_every = 2.0
      end

      def store=(store)
        unless nil.equal?(store) || Store === store || Stores.pool?(store) || Configuration.responds?(store, :call)
          raise TypeError, "store must be a LeaseMachines::Store or a factory of them (anything with call), got " \
                           "#{LeaseMachines.shown(store)}"
        end

        @store = store
      end

      def actions=(actions)
        unless true.equal?(actions) || false.equal?(actions)
          raise TypeError, "actions must be true or false, got #{LeaseMachines.shown(actions)}"
        end

        @actions = actions
      end

      def authorize=(hook)
        unless nil.equal?(hook) || Configuration.responds?(hook, :call)
          raise TypeError, "authorize must respond to call (it is given the Rack::Request), got " \
                           "#{LeaseMachines.shown(hook)}"
        end

        @authorize = hook
      end

      def expiring_within=(seconds)
        @expiring_within = Configuration.seconds("expiring_within", seconds, EXPIRING_WITHIN)
      end

      def poll_every=(seconds)
        @poll_every = Configuration.seconds("poll_every", seconds, POLL_EVERY)
      end

      # Raises ArgumentError when the options cannot serve together: actions without an authorize hook.
      def check!
        return self unless @actions && @authorize.nil?

        raise ArgumentError, "actions need an authorize hook: pass authorize: (called with the Rack::Request, " \
                             "truthy to allow), as in authorize: ->(request) { request.env[\"warden\"]&.user&.admin? }"
      end

      # +value+ as Float seconds within +range+: TypeError for anything but a Float or an Integer, ArgumentError
      # outside the range (NaN included).
      def self.seconds(name, value, range)
        unless Float === value || Integer === value
          raise TypeError, "#{name} must be Float seconds, got #{LeaseMachines.shown(value)}"
        end
        unless range.cover?(value)
          raise ArgumentError, "#{name} must be from #{range.begin} to #{range.end} seconds, got #{value}"
        end

        value.to_f
      end

      # Whether +value+ (any object, a BasicObject too) responds to +method+.
      def self.responds?(value, method) = KERNEL_RESPOND_TO.bind_call(value, method)

      KERNEL_RESPOND_TO = Kernel.instance_method(:respond_to?)
      private_constant :KERNEL_RESPOND_TO
    end
  end
end
