# frozen_string_literal: true

# The row codec of the PostgreSQL store: rows, marks and clock readings read from binary and text results (exact
# whatever the connection's settings and type map), owners as signed bigints and back, a row as SQL literals.

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      private

      # The rows of a read-only statement, in binary and decoded by column type (bigint, integer, double precision,
      # text): exact whatever the connection's settings. One round trip.
      def binary_rows(sql, params)
        result = raw(@connection.exec_params(sql, params, BINARY))
        types = Array.new(result.nfields) { result.ftype(_1) }
        result.values.map do |row|
          row.each_with_index.map { |value, index| value && decode(types[index], value) }
        end
      end

      def decode(type, bytes)
        case type
        when 20 then integer(bytes) # bigint
        when 23 then bytes.unpack1("l>") # integer
        when 701 then float(bytes) # double precision
        when 25 then bytes.force_encoding(Encoding::UTF_8) # text
        else raise StoreError, "#{@name}: a column of type #{type} in the lease store's tables"
        end
      end

      # The row's columns from a binary result (NaN and infinities come through, for the extension to refuse).
      def row_of(result)
        return nil if result.ntuples.zero?

        owner, token, expires_at, last_issued, observed, revision = raw(result).values.first
        owner = owner && integer(owner)
        owner += 2**64 if owner&.negative?
        [owner, token && integer(token), expires_at && float(expires_at), last_issued && integer(last_issued),
         float(observed), integer(revision)]
      end

      def mark_of(result) = result.ntuples.zero? ? nil : integer(raw(result).getvalue(0, 0))

      # The row's columns from a decision's text result, its doubles as float8send's bytes.
      def text_row_of(result)
        return nil if result.ntuples.zero?

        text_columns(raw(result).values.first)
      end

      # A row's columns from their text (doubles as float8send's bytes).
      def text_columns(columns)
        owner, token, expires_at, last_issued, observed, revision = columns
        owner = owner && Integer(owner, 10)
        owner += 2**64 if owner&.negative?
        [owner, token && Integer(token, 10), expires_at && bytes_float(expires_at),
         last_issued && Integer(last_issued, 10), bytes_float(observed), Integer(revision, 10)]
      end

      # A double from its 8 bytes in hex (16 digits).
      def bytes_float(hex) = [hex].pack("H*").unpack1("G")

      # +result+ read as the bytes the server sent, whatever type map the connection has (an application's
      # PG::BasicTypeMapForResults would decode them).
      def raw(result)
        result.type_map = all_strings
        result
      end

      # A binary bigint and a binary double precision.
      def integer(bytes) = bytes.unpack1("q>")
      def float(bytes) = bytes.unpack1("G")

      def columns_of(row)
        owner, *rest = row
        [signed(owner), *rest]
      end
    end
  end
end
