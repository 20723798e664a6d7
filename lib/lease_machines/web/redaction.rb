# frozen_string_literal: true

module LeaseMachines
  class Web
    # What the dashboard shows of a database's name or a store's message: Store#path and StoreError never carry a
    # password, and this masks one anyway, should a URL or a libpq keyword string ever reach the screen with one
    # (postgres://user:secret@host becomes postgres://user:***@host; password=secret becomes password=***).
    module Redaction
      USERINFO = %r{([a-z][a-z0-9+.-]*://[^/\s:@]*:)[^@\s/]*@}i
      KEYWORD = /(\bpassword=)('(?:[^'\\]|\\.)*'|[^&\s]*)/i

      # +text+ (a String) with every password in it replaced by ***.
      def self.mask(text) = text.to_s.gsub(USERINFO, "\\1***@").gsub(KEYWORD, "\\1***")
    end
  end
end
