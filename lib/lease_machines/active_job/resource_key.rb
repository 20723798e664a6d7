# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # The name of a job's resource: "GROUP:KEY", where KEY is what the declaration's key proc returned for the job's
    # arguments. An ActiveRecord record (anything with a model name and an id) is "Account/42"; a String, Symbol or
    # Integer is itself; an Array is its parts joined by ",". Anything else is a TypeError: a key must not depend on
    # an object's +to_s+.
    module ResourceKey
      module_function

      def resource_name(group, value) = "#{group}:#{part(value)}"

      def part(value)
        case value
        when String, Symbol, Integer then value.to_s
        when Array
          raise ArgumentError, "the lease key is an empty Array" if value.empty?

          value.map { part(_1) }.join(",")
        else record(value)
        end
      end

      def record(value)
        if value.respond_to?(:model_name) && value.respond_to?(:id)
          id = value.id
          raise ArgumentError, "the lease key #{value.model_name.name} has no id yet (save it first)" if id.nil?

          "#{value.model_name.name}/#{id}"
        elsif value.respond_to?(:to_global_id)
          gid = value.to_global_id
          "#{gid.model_name}/#{gid.model_id}"
        else
          raise TypeError, "the lease key must be a record, String, Symbol, Integer or an Array of them, " \
                           "got #{Store.shown(value)}"
        end
      end
    end
  end
end
