# frozen_string_literal: true

module LeaseMachines
  class Web
    # A request's parameters (the query string's, or a POST's form), checked as the pages read them: every name and
    # value UTF-8, each parameter given once, numbers written in decimal within their range. Every fault is a
    # BadRequest saying which parameter and what it must be.
    class Params
      # Integers are read from at most this many digits (a 64-bit event id has 19).
      DIGITS = /\A\d{1,19}\z/

      # Reads +request+'s query string (+form+: its form body too, for a POST). Raises BadRequest for a query Rack
      # cannot parse (a stray %, nesting too deep, too many parameters), a name or value that is not UTF-8, or a name
      # given more than once.
      def initialize(request, form: false)
        @values = form ? request.params : request.GET
        @values.each do |name, value|
          next if utf8?(name) && (!(String === value) || utf8?(value))

          raise BadRequest, "the parameter #{LeaseMachines.shown(name.b)} is not valid UTF-8"
        end
        once!(request, form)
      rescue Rack::BadRequest => e # Rack's message may quote the query's bytes: shown as UTF-8, scrubbed
        raise BadRequest, "the query cannot be read: #{e.message.dup.force_encoding(Encoding::UTF_8).scrub}"
      end

      # The String value of +name+, nil when absent (or empty, unless +empty+); BadRequest for a nested one (name[]).
      def string(name, empty: false)
        value = @values[name]
        return nil if value.nil? || (value == "" && !empty)
        return value if String === value

        raise BadRequest, "#{name} must be given once, as name=value, got #{LeaseMachines.shown(value)}"
      end

      # +name+ as an Integer within +range+ (decimal digits only), +default+ when absent.
      def integer(name, range, default: nil)
        text = string(name) or return default
        number = DIGITS.match?(text) ? Integer(text, 10) : nil
        return number if number && range.cover?(number)

        raise BadRequest, "#{name} must be an integer from #{range.begin} to #{range.end}, got " \
                          "#{LeaseMachines.shown(text)}"
      end

      # A resource name: +name+'s value, required, of 1 to MAX_RESOURCE_BYTES bytes.
      def resource(name)
        value = string(name) or raise BadRequest, "#{name} is required: the resource's name"
        return value if value.bytesize <= MAX_RESOURCE_BYTES

        raise BadRequest, "#{name} must be at most #{MAX_RESOURCE_BYTES} bytes, got #{value.bytesize}"
      end

      # A slot of a resource's semaphore, 0 to MAX_LIMIT - 1; +default+ when absent.
      def slot(name = "slot", default: nil) = integer(name, 0..(MAX_LIMIT - 1), default: default)

      # The [resource, slot] key of the +after+ parameter (PageKey), nil when absent.
      def page_key(name = "after")
        text = string(name)
        text && PageKey.decode(text)
      end

      private

      # Raises BadRequest for a name given twice: Rack keeps the last value of ?prefix=a&prefix=b, and a page must not
      # answer for a value the request did not settle. Counted over the query and, with +form+, a url-encoded body
      # (whose text Rack keeps; the revoke form posts one): a name in both is given twice too.
      def once!(request, form)
        texts = [request.query_string]
        texts << request.get_header(Rack::RACK_REQUEST_FORM_VARS) if form
        counts = Hash.new(0)
        texts.compact.each do |text|
          Rack::Utils.parse_query(text, "&").each { |name, value| counts[name] += Array === value ? value.size : 1 }
        end
        name, count = counts.find { |_name, count| count > 1 }
        return if name.nil?

        raise BadRequest, "the parameter #{LeaseMachines.shown(name)} is given #{count} times: give it once"
      end

      def utf8?(text) = text.dup.force_encoding(Encoding::UTF_8).valid_encoding?
    end
  end
end
