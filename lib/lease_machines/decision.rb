# frozen_string_literal: true

module LeaseMachines
  # The answer to every Authority and Table request.
  #
  # - +status+: +:granted+, +:renewed+, +:released+ or +:rejected+ (a Table also answers +:transferred+ and
  #   +:reaped+); Decision.statuses lists them all, in the order a lease goes through them.
  # - +lease+: the Lease a grant or a renewal carries (a TableLease from a Table, also for a transfer); +nil+
  #   otherwise.
  # - +reason+: why a request was refused, one of REASONS (+:occupied+, +:stale_token+, +:expired+, ...); +nil+
  #   otherwise.
  #
  # Refusals are values, never exceptions. Frozen, compared by value, shareable across Ractors. REASONS and
  # Decision.statuses come from the extension.
  Decision = Data.define(:status, :lease, :reason) do
    def granted? = status == :granted
    def renewed? = status == :renewed
    def transferred? = status == :transferred
    def released? = status == :released
    def reaped? = status == :reaped
    def rejected? = status == :rejected
    # True unless the request was refused.
    def accepted? = status != :rejected
  end
end
