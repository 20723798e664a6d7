# frozen_string_literal: true

module LeaseMachines
  # What Election.certify_votes decides: +valid+ when one candidate (+leader+) has the votes of +quorum+ of the
  # +members+ distinct members in +term+; +status+ (+:certified+, +:no_members+, +:no_votes+, +:no_quorum+,
  # +:split+), the counted +voters+, and every Equivocation found.
  QuorumCertificate = Data.define(:valid, :status, :leader, :term, :members, :quorum, :voters, :equivocations) do
    def valid? = valid

    # The status for people: "certified", "no quorum", "split", ...
    def message = status.to_s.tr("_", " ")
  end
end
