"""add migrate-cron job_attempts history

Revision ID: fe6d79d1748b
Revises: 760b9f6979e4

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, postgresql

# revision identifiers, used by Alembic.
revision: str = 'fe6d79d1748b'
down_revision: Union[str, Sequence[str], None] = '760b9f6979e4'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # Tables and indexes rendered from migrate_cron/store/schema.py.
    op.create_table('job_attempts',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('kind', sa.String(length=200).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=200), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=200), 'mysql'), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('worker', sa.String(length=255), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('output_tail', sa.Text(), nullable=True),
    sa.CheckConstraint("outcome IN ('done', 'failed')", name='job_attempts_outcome_check'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('job_id', 'started_at', name='job_attempts_run_key')
    )
    op.create_index('job_attempts_finished_idx', 'job_attempts', ['finished_at'], unique=False)
    op.create_index('job_attempts_kind_idx', 'job_attempts', ['kind', 'finished_at'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('job_attempts')
