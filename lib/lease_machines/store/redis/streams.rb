# frozen_string_literal: true

# The event log of the Redis store as it is read back: every resource's stream, and a stream's entries as the SQL
# adapters' event rows.

module LeaseMachines
  class Store
    class Redis < Adapter
      EVENT_INTEGERS = %w[slot owner token revision replaced_owner replaced_token highest].freeze
      EVENT_FLOATS = %w[at expires_at replaced_expires_at].freeze
      private_constant :EVENT_INTEGERS, :EVENT_FLOATS

      private

      # Every event of every resource's stream, oldest first.
      def every_event
        streams(->(name) { ["XRANGE", self.class.key(name, "events"), "-", "+"] }, &:itself).sort_by!(&:first)
      end

      # The events that +range+ (the command for a name) reads from every resource's stream, pipelined BATCH
      # resources at a time; the block trims what was found after each batch.
      def streams(range)
        found = []
        each_names(INDEX, "-", "+") do |names|
          replies = fetch { |pipeline| names.each { pipeline.call(*range.call(_1)) } }
          names.zip(replies) { |name, reply| found.concat(entries(name, reply)) }
          found = yield(found)
        end
        found
      end

      # A stream's entries as event rows: [id, resource, slot, kind, at, owner, token, expires_at, revision, reason,
      # replaced_owner, replaced_token, replaced_expires_at, highest].
      def entries(resource, reply)
        reply.map do |id, fields|
          event = pairs(fields).to_h do |field, value|
            number = if EVENT_INTEGERS.include?(field)
                       Integer(value, 10, exception: false)
                     elsif EVENT_FLOATS.include?(field)
                       Float(value, exception: false)
                     else
                       value
                     end
            [field, number.nil? ? value : number]
          end
          [Integer(id.split("-").first, 10), resource, event.fetch("slot", 0),
           *EVENT_FIELDS.map { event[_1] }, nil]
        end
      end
    end
  end
end
