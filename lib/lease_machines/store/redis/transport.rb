# frozen_string_literal: true

# The transport of the Redis store: the client it opens, and a round trip that writes nothing, made once more on a
# new connection when the connection broke.

module LeaseMachines
  class Store
    class Redis < Adapter
      private

      # A client to +url+, refused before it connects when the URL cannot be read (whose message would quote it).
      def connect(url)
        require "uri"
        URI.parse(url)
        RedisClient.config(url: url, connect_timeout: ANSWER_TIMEOUT, read_timeout: ANSWER_TIMEOUT,
                           write_timeout: ANSWER_TIMEOUT).new_client
      rescue URI::Error, ArgumentError
        raise ArgumentError, "database is not a readable redis:// URL (#{self.class.describe(url)})", cause: nil
      end

      # A round trip that writes nothing: +command+, or the block's pipeline (MULTI ... EXEC with +transaction+). Made
      # once more, on a new connection, when the connection broke (the socket of a server restarted since the last
      # request is dead, and only the next command finds out); never a COMMIT, whose first attempt may have
      # committed. A timeout is not made again.
      def fetch(*command, transaction: false, &pipeline)
        attempt = 0
        begin
          if pipeline
            transaction ? @client.multi(&pipeline) : @client.pipelined(&pipeline)
          else
            @client.call(*command)
          end
        rescue ::RedisClient::ConnectionError => e
          raise if ::RedisClient::TimeoutError === e || (attempt += 1) > 1

          retry
        end
      end
    end
  end
end
