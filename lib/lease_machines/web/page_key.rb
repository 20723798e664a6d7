# frozen_string_literal: true

module LeaseMachines
  class Web
    # The +after+ parameter of the resources page: the [resource, slot] key of the last row seen, written
    # "SLOT:RESOURCE" (slot first, so that a name with colons, slashes or any other UTF-8 round-trips), then
    # percent-encoded in the link like every parameter.
    module PageKey
      FORMAT = /\A(0|[1-9]\d{0,3}):(.+)\z/m

      # The key of +state+'s row (an Array [resource, slot]) as the parameter's text.
      def self.encode(key)
        resource, slot = key
        "#{slot}:#{resource}"
      end

      # The [resource (String), slot (Integer)] key +text+ names; BadRequest when it is not "SLOT:RESOURCE" with a
      # slot below MAX_LIMIT and a resource name of at most MAX_RESOURCE_BYTES.
      def self.decode(text)
        match = FORMAT.match(text)
        slot = match && Integer(match[1], 10)
        name = match && match[2]
        unless slot && slot < MAX_LIMIT && name.bytesize <= MAX_RESOURCE_BYTES
          raise BadRequest, "after must be the key of a row, SLOT:RESOURCE (as the Next link writes it), got " \
                            "#{LeaseMachines.shown(text)}"
        end

        [name, slot].freeze
      end
    end
  end
end
