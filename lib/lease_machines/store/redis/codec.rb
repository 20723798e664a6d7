# frozen_string_literal: true

# The row codec of the Redis store: a row and an event as the words the COMMIT script sets (a hash's fields and a
# stream entry's), and a hash's fields read back as the row the extension reads (nil where there is none).

module LeaseMachines
  class Store
    class Redis < Adapter
      # A row's columns, in the order they cross to the extension.
      COLUMNS = %w[owner token expires_at last_issued observed revision].freeze
      FLOAT_COLUMNS = %w[expires_at observed].freeze
      EVENT_FIELDS = %w[kind at owner token expires_at revision reason replaced_owner replaced_token
                        replaced_expires_at].freeze
      private_constant :COLUMNS, :FLOAT_COLUMNS, :EVENT_FIELDS

      private

      # [the names to delete, the names and values to set] of +row+ in +slot+'s fields, each as words separated by
      # spaces (both empty for nil).
      def row_words(slot, row)
        return ["", ""] if row.nil?

        prefix = slot.zero? ? "" : "#{slot}:"
        deletes = +""
        sets = +""
        COLUMNS.each_with_index do |column, i|
          value = row[i]
          value.nil? ? deletes << " " << prefix << column : sets << " " << prefix << column << " " << word(value)
        end
        [deletes, sets]
      end

      # The event's fields and values (nil ones left out), with its slot, as words separated by spaces.
      def event_words(slot, event)
        words = +"slot #{slot}"
        EVENT_FIELDS.each_with_index do |field, i|
          value = event[i]
          words << " " << field << " " << word(value) unless value.nil?
        end
        words
      end

      # A column or event field as a word of #row_words or #event_words: #text, and never with white space in it
      # (Lua's %s: what the script splits on).
      def word(value)
        return text(value) unless String === value && value.match?(/[ \t\n\v\f\r]/)

        raise TypeError, "the extension wrote #{LeaseMachines.shown(value)} into a row"
      end

      # A column as Redis stores it: Integers in decimal, Floats as Ruby writes them (which read back exactly).
      def text(value)
        case value
        when Integer, Float then value.to_s
        when String then value
        else raise TypeError, "the extension wrote #{LeaseMachines.shown(value)} into a row"
        end
      end

      # A row's six stored fields as the extension reads them: nil for a row that has none; a field that does not
      # read as its type is passed on as it is, for the extension to refuse (StoreError).
      def row_of(values)
        return nil if values.all?(&:nil?)

        COLUMNS.zip(values).map do |column, value|
          next value if value.nil?

          read = FLOAT_COLUMNS.include?(column) ? Float(value, exception: false) : Integer(value, 10, exception: false)
          read.nil? ? value : read
        end
      end

      # The slot rows above 0 from a slots hash's fields ("SLOT:column"), as rows[slot - 1].
      def slot_rows(fields)
        columns = Hash.new { |hash, slot| hash[slot] = Array.new(COLUMNS.size) }
        pairs(fields).each do |field, value|
          slot, column = field.split(":", 2)
          index = COLUMNS.index(column)
          slot = Integer(slot, 10, exception: false)
          raise StoreError, "corrupt slots hash in #{@name}: field #{field.inspect}" unless index && slot&.positive?

          columns[slot][index] = value
        end
        rows = Array.new(columns.keys.max.to_i)
        columns.each { |slot, values| rows[slot - 1] = row_of(values) }
        rows
      end

      # A hash's reply as [field, value] pairs: RESP3 answers a Hash, RESP2 (and a script) a flat Array.
      def pairs(reply)
        return [] if reply.nil?

        Hash === reply ? reply.to_a : reply.each_slice(2).to_a
      end
    end
  end
end
