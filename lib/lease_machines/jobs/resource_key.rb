# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # The name of a job's resource: "GROUP:KEY", where KEY is what the declaration's key proc returned for the job's
    # arguments. An ActiveRecord record (anything with a model name and an id) is "Account/42"; a String, Symbol or
    # Integer is itself; an Array is its parts joined by ",". Anything else is a TypeError: a key must not depend on
    # an object's +to_s+. A String or Symbol must not be empty (ArgumentError) and is converted to UTF-8, the
    # encoding of resource names (see utf8: "relevé".b, "relevé" and "relevé" in UTF-16 name one resource); one that
    # cannot be is an ArgumentError naming it.
    module ResourceKey
      # Kernel#respond_to?, for values that may not have it (a BasicObject).
      RESPOND_TO = Kernel.instance_method(:respond_to?)
      # Encodings whose code units are wider than a byte: always transcoded.
      WIDE = /\AUTF-(16|32)/
      # Encodings read by their bytes only, never transcoded.
      BYTES = [Encoding::UTF_8, Encoding::US_ASCII, Encoding::BINARY].freeze

      module_function

      def resource_name(group, value) = "#{utf8(group, "the lease group")}:#{part(value)}"

      def part(value)
        case value
        when String, Symbol
          raise ArgumentError, "the lease key is an empty #{value.class.name}" if value.empty?

          utf8(value.to_s, "the lease key #{LeaseMachines.shown(value)}")
        when Integer then value.to_s
        when Array
          raise ArgumentError, "the lease key is an empty Array" if value.empty?

          value.map { part(_1) }.join(",")
        else record(value)
        end
      end

      def record(value)
        if responds?(value, :model_name) && responds?(value, :id)
          id = value.id
          raise ArgumentError, "the lease key #{value.model_name.name} has no id yet (save it first)" if id.nil?

          "#{value.model_name.name}/#{id}"
        elsif responds?(value, :to_global_id)
          gid = value.to_global_id
          "#{gid.model_name}/#{gid.model_id}"
        else
          raise TypeError, "the lease key must be a record, String, Symbol, Integer or an Array of them, " \
                           "got #{LeaseMachines.shown(value)}"
        end
      end

      # +string+ as valid UTF-8 (itself when it is already), by the rule of every resource name the gem reads:
      # bytes that are valid UTF-8 are taken as UTF-8 whatever the encoding says (a binary String, a US-ASCII one
      # read under the C locale), except in UTF-16 and UTF-32, whose code units are wider than a byte; other Strings
      # are transcoded. ArgumentError, naming +what+, when it cannot be.
      def utf8(string, what)
        encoding = string.encoding
        return string if encoding == Encoding::UTF_8 && string.valid_encoding?

        unless WIDE.match?(encoding.name)
          bytes = string.dup.force_encoding(Encoding::UTF_8)
          return bytes if bytes.valid_encoding?
          if BYTES.include?(encoding)
            raise ArgumentError, "#{what} is not valid UTF-8 (#{encoding}, read by its bytes)"
          end
        end
        string.encode(Encoding::UTF_8)
      rescue EncodingError => e
        raise ArgumentError, "#{what} cannot be converted from #{encoding} to UTF-8 (#{e.message})"
      end

      def responds?(value, method) = RESPOND_TO.bind_call(value, method)
    end
  end
end
