# frozen_string_literal: true

module LeaseMachines
  class Web
    # The notice a resource's page shows after a revoke, from the parameters of the redirect: +revoked=SLOT+ (and
    # +token=N+, the token the form named, now fenced), or +refused=SLOT&reason=REASON+. Only numbers and a reason
    # of REASONS travel in the query, and the words are the page's own, so no link can put text of its choosing on
    # the page.
    class Notice
      WHY = {
        not_held: "it had no live lease",
        expired: "its lease had expired",
        stale_token: "its lease had moved on to a newer token than the one shown"
      }.freeze

      def initialize(params)
        @revoked = params.slot("revoked")
        @refused = params.slot("refused")
        @token = params.integer("token", 1..Store::MAX_TOKEN)
        reason = params.string("reason")
        @reason = REASONS.find { _1.to_s == reason }
      end

      # The redirect's parameters after +decision+ (Store#revoke's) on +slot+ with +token+ (the form's, or nil).
      def self.params(decision, slot, token)
        return { revoked: slot, token: token } if decision.released?

        { refused: slot, reason: decision.reason }
      end

      # The notice's markup ("" when there is none): only Integers and the page's own words.
      def html
        if @revoked
          fenced = @token ? "; token #{@token} is fenced from now on" : ""
          %(<p class="flash" role="status">Revoked the lease of slot #{@revoked}#{fenced}.</p>)
        elsif @refused
          why = WHY.fetch(@reason, "the store refused (#{@reason})")
          %(<p class="flash refused" role="status">Slot #{@refused} was not revoked: #{why}. Nothing changed.</p>)
        else
          ""
        end
      end
    end
  end
end
