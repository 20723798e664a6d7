# frozen_string_literal: true

# What the Redis store knows of a resource without reading it: as its last commit of it left it, or as a refused
# commit's answer found it (up to KNOWN resources), and each request's read (its stamp) kept for its commit.

module LeaseMachines
  class Store
    class Redis < Adapter
      # How many resources a store remembers as its last commit of each left them (see #open_request).
      KNOWN = 1024
      # A stamp this store writes (16 hex digits, random: a server that lost its rows never repeats one), or an
      # earlier version's decimal one.
      STAMP = /\A(?:\h{16}|\d+)\z/
      private_constant :KNOWN, :STAMP

      private

      # The resource as this store's last commit of it left it, or as its last refused commit found it: [row (nil:
      # none), stamp, epoch, the server's TIME they were read at (Integer microseconds; nil: written by this store,
      # not read), true when it is known to have no slot rows], taken (the request's commit leaves the next). Nil when
      # this store does not know it.
      def remembered(resource) = @known.delete(resource)

      # Keeps +row+, +stamp+ and +epoch+ as the resource's state, for the next request's open, with the +time+ they
      # were read at (a refused commit's answer; nil: this store's own commit). The oldest known resource is forgotten
      # beyond KNOWN.
      def remember(resource, row, stamp, epoch, time = nil, no_slots: nil)
        @known[resource] = [row, stamp.nil? || stamp.empty? ? nil : stamp, epoch, time, no_slots].freeze
        @known.shift if @known.size > KNOWN
      end

      # The resource as this store remembers it (#remembered's +known+), opened without a round trip: the block makes
      # the rows of slot 0's +row+. Its clock is a refused commit's TIME, else the carried one (#carried_clock).
      def opened_known(resource, known, clock)
        row, stamp, epoch, time, no_slots = known
        carried = carried_clock if clock && time.nil?
        number = request(resource, stamp, epoch, row, carried, fresh: !time.nil?, no_slots: no_slots)
        [yield(row), clock ? (time || carried) / 1_000_000.0 : nil, number]
      end

      # The request's read kept for its close (the resource, its stamp, the epoch, the instant +at+ carried from the
      # last clock reading (Integer microseconds; nil: read, or not the server's), slot 0's +row+, whether +epoch+ was
      # read by this request, whether the resource is known to have no slot rows). Returns the epoch as an Integer
      # (nil: none).
      def request(resource, stamp, epoch, row, at = nil, fresh: true, no_slots: nil)
        unless stamp.nil? || STAMP.match?(stamp)
          raise StoreError, "corrupt lease row for #{resource.inspect} in #{@name}: stamp #{stamp.inspect}"
        end

        number = epoch_number(epoch)
        @request = [resource, stamp, epoch, at, row, fresh, no_slots]
        number
      end
    end
  end
end
